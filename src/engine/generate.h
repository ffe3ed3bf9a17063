#pragma once
// The generation loop shared by the CLI and the server: prefill a prompt, then sample and decode
// one token at a time until max tokens, an end-of-generation token or a stop string.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sequence.h"
#include "snapkv/tokenizer.h"
#include "snapkv/generate.h"

namespace snapkv {

GenerateStats generate(Sequence& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       const GenerateParams& params, const TokenCallback& on_token,
                       const std::function<void(int, int)>& progress = {});

}  // namespace snapkv

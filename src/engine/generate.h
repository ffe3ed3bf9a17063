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

// With params.speculation, drafts are verified in one pass each (SpecMode::kDraft drafts with the
// draft session, which must use the model's vocabulary and is advanced and rolled back as needed).
GenerateStats generate(Sequence& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       const GenerateParams& params, const TokenCallback& on_token,
                       const std::function<void(int, int)>& progress = {}, Sequence* draft = nullptr);

// Each session prefills its prompt (one after the other), then all decode together, one batched
// step per token (the weights are read once per step for all), each ending as generate() ends.
// on_token(b, id, text) as generate()'s, for session b. Stats per session: decode_s runs from the
// first sample to that session's end.
std::vector<GenerateStats> generate_batch(std::span<Sequence* const> sessions, const Tokenizer& tokenizer,
                                          std::span<const std::vector<int32_t>> prompts, const GenerateParams& params,
                                          const BatchTokenCallback& on_token);

}  // namespace snapkv

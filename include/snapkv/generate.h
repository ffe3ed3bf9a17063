#pragma once
// Generation parameters and statistics: what generate() (snapkv/session.h) takes and returns.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "snapkv/sampling.h"

namespace snapkv {

struct GenerateParams {
  int max_tokens = 128;
  SamplingParams sampling;
  bool stop_at_eog = true;  // stop at the model's end-of-generation tokens
  bool compress_prompt = true;  // let the session's press compress the prompt

  std::string validate() const;
};

struct GenerateStats {
  int n_prompt = 0;
  int n_generated = 0;
  double prefill_s = 0;
  int n_decoded = 0;       // forward passes of generated tokens (the last one needs none)
  double decode_s = 0;     // time from the first sample to the last
  bool stopped_at_eog = false;
};

// on_token(id, text) receives each generated token with its complete UTF-8 text (possibly empty
// while a character is incomplete); returning false stops generation.
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;
// The same for sequence b of a batch (generate_batch).
using BatchTokenCallback = std::function<bool(size_t b, int32_t id, std::string_view text)>;

}  // namespace snapkv

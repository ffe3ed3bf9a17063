#pragma once
// Sampling parameters. Defaults are greedy decoding; validate() returns a readable error
// (empty when valid), which the CLI and the server turn into an error line or an HTTP 400.
#include <cstdint>
#include <string>

namespace snapkv {

struct SamplingParams {
  float temperature = 0.0f;      // <= 0: greedy (argmax), otherwise softmax(logits / temperature)
  int top_k = 0;                 // keep the k most likely tokens; 0 disables
  float top_p = 1.0f;            // keep the smallest set with cumulative probability >= top_p
  float min_p = 0.0f;            // drop tokens with p < min_p * p_max
  float repeat_penalty = 1.0f;   // CTRL-style: positive logits / penalty, negative * penalty
  int repeat_last_n = 64;        // tokens looked back for the penalty
  uint64_t seed = 0;             // RNG seed; equal seeds give equal samples

  std::string validate() const;
};

}  // namespace snapkv

#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "snapkv/sampling.h"

namespace snapkv {

// The greedy next token: the index of the largest logit (the first of equal ones).
int32_t greedy_token(std::span<const float> logits);

// Picks the next token from a row of logits. Order of the filters follows llama.cpp's default
// chain: repetition penalty, top-k, top-p, min-p, temperature, then a draw.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // history: tokens so far (prompt and generated), used by the repetition penalty.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace snapkv

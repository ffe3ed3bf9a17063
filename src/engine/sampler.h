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
  // Speculative sampling of a drafted token: returns draft with probability p(draft) under the
  // distribution sample() draws from, else a token drawn from p without draft (renormalized), so
  // the result follows p exactly (the standard rule for a draft that puts all its mass on one
  // token). Greedy: the greedy token, which equals draft exactly when the draft is accepted.
  int32_t sample_given_draft(std::span<const float> logits, std::span<const int32_t> history, int32_t draft);

 private:
  // The candidates sample() draws from and their weights (unnormalized) in cand_ / weight_, or
  // the greedy token when sampling is greedy.
  int32_t distribution(std::span<const float> logits, std::span<const int32_t> history);

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<double> weight_;
};

}  // namespace snapkv

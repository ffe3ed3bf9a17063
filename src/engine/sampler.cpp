#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "ops/elementwise.h"
#include "util/error.h"

namespace snapkv {

int32_t greedy_token(std::span<const float> logits) {
  return static_cast<int32_t>(argmax(logits.data(), static_cast<int64_t>(logits.size())));
}

std::string SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || temperature > 100.0f) return "temperature must be in [0, 100]";
  if (top_k < 0) return "top_k must be >= 0";
  if (!(top_p > 0.0f && top_p <= 1.0f)) return "top_p must be in (0, 1]";
  if (!(min_p >= 0.0f && min_p < 1.0f)) return "min_p must be in [0, 1)";
  if (!(repeat_penalty > 0.0f) || repeat_penalty > 100.0f) return "repeat_penalty must be in (0, 100]";
  if (repeat_last_n < 0) return "repeat_last_n must be >= 0";
  return {};
}

Sampler::Sampler(const SamplingParams& params) : p_(params), rng_(params.seed) {
  if (const std::string err = p_.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
}

int32_t Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history) {
  const bool penalty = p_.repeat_penalty != 1.0f && p_.repeat_last_n > 0;
  // Greedy without a penalty: the first largest logit, as below, without the candidate list (a
  // pair per vocabulary entry, built per token).
  if (p_.temperature <= 0.0f && !penalty) return greedy_token(logits);
  const auto n = static_cast<int32_t>(logits.size());
  cand_.resize(n);
  for (int32_t i = 0; i < n; ++i) cand_[i] = {logits[i], i};

  if (penalty) {
    const size_t from = history.size() > static_cast<size_t>(p_.repeat_last_n) ? history.size() - p_.repeat_last_n : 0;
    const std::unordered_set<int32_t> seen(history.begin() + from, history.end());
    for (int32_t id : seen) {
      if (id < 0 || id >= n) continue;
      float& l = cand_[id].first;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }
  const auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  if (p_.temperature <= 0.0f) return std::min_element(cand_.begin(), cand_.end(), by_logit)->second;

  size_t k = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < k) k = p_.top_k;
  std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), by_logit);
  cand_.resize(k);

  // Probabilities at temperature 1 for top-p and min-p, as llama.cpp's chain computes them.
  std::vector<double> prob(k);
  double z = 0;
  for (size_t i = 0; i < k; ++i) z += (prob[i] = std::exp(static_cast<double>(cand_[i].first - cand_[0].first)));
  size_t keep = k;
  if (p_.top_p < 1.0f) {
    double cum = 0;
    for (size_t i = 0; i < k; ++i) {
      cum += prob[i] / z;
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p_.min_p > 0.0f) {
    size_t i = 1;
    while (i < keep && prob[i] >= p_.min_p * prob[0]) ++i;
    keep = i;
  }
  cand_.resize(keep);
  weight_.resize(keep);
  for (size_t i = 0; i < keep; ++i) {
    weight_[i] = std::exp(static_cast<double>(cand_[i].first - cand_[0].first) / p_.temperature);
  }
  return -1;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (const int32_t id = distribution(logits, history); id >= 0) return id;
  std::discrete_distribution<size_t> dist(weight_.begin(), weight_.end());
  return cand_[dist(rng_)].second;
}

int32_t Sampler::sample_given_draft(std::span<const float> logits, std::span<const int32_t> history, int32_t draft) {
  if (const int32_t id = distribution(logits, history); id >= 0) return id;
  double z = 0, p_draft = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    z += weight_[i];
    if (cand_[i].second == draft) p_draft = weight_[i];
  }
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * z < p_draft) return draft;
  for (size_t i = 0; i < cand_.size(); ++i) {
    if (cand_[i].second == draft) weight_[i] = 0;
  }
  std::discrete_distribution<size_t> dist(weight_.begin(), weight_.end());
  return cand_[dist(rng_)].second;
}

}  // namespace snapkv

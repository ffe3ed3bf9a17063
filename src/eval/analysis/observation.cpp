#include "eval/analysis/observation.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "engine/sampler.h"

namespace snapkv {

std::vector<std::vector<int32_t>> vote(const LayerInput& in, int64_t w, int64_t prefix, double top_p) {
  HeadScores s = window_attention(in, w);
  std::vector<std::vector<int32_t>> out(s.size());
  for (size_t h = 0; h < s.size(); ++h) {
    const int64_t n = std::min<int64_t>(prefix, static_cast<int64_t>(s[h].size()));
    const auto k = static_cast<int64_t>(std::floor(top_p * static_cast<double>(n)));
    out[h] = top_k(std::span<const float>(s[h]).first(static_cast<size_t>(n)), k);
  }
  return out;
}

double Hits::rate() const {
  return significant ? static_cast<double>(hit) / static_cast<double>(significant)
                     : std::numeric_limits<double>::quiet_NaN();
}

void count_hits(std::span<const float> probs, std::span<const int32_t> voted, double theta, Hits& h) {
  auto v = voted.begin();
  for (size_t j = 0; j < probs.size(); ++j) {
    if (!(probs[j] > theta)) continue;
    ++h.significant;
    v = std::lower_bound(v, voted.end(), static_cast<int32_t>(j));
    if (v != voted.end() && *v == static_cast<int32_t>(j)) ++h.hit;
  }
}

double overlap_share(std::span<const int32_t> a, std::span<const int32_t> b) {
  if (a.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<int32_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(a.size());
}

std::pair<int, int> find_text_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids, size_t end,
                                     std::string_view text, bool last) {
  end = std::min(end, ids.size());
  std::string all;
  std::vector<size_t> starts;  // of each token's piece in all
  for (size_t i = 0; i < end; ++i) {
    starts.push_back(all.size());
    all += tokenizer.token_piece(ids[i]);
  }
  if (text.empty()) return {-1, -1};
  const size_t at = last ? all.rfind(text) : all.find(text);
  if (at == std::string::npos) return {-1, -1};
  // The token holding the first byte, and the first token starting at or after the last byte's end.
  const auto first = std::upper_bound(starts.begin(), starts.end(), at) - starts.begin() - 1;
  const auto stop = std::lower_bound(starts.begin(), starts.end(), at + text.size()) - starts.begin();
  return {static_cast<int>(first), static_cast<int>(stop)};
}

std::vector<int32_t> continue_greedily(RecordedPrefill& state, const Tokenizer& tokenizer, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t tok = greedy_token(state.last_logits());
    if (tokenizer.is_eog(tok)) break;
    const int32_t one[] = {tok};
    state.extend(one);
    out.push_back(tok);
  }
  return out;
}

}  // namespace snapkv

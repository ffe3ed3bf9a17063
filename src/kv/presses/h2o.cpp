// h2o (observed attention): the entries with the highest attention received from all new
// queries, each sum divided by the number of queries that could see the entry; GQA groups
// reduced as for SnapKV. As kvpress's ObservedAttentionPress, no entry is protected.
#include <algorithm>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class H2oPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }
  PressNeeds needs() const override { return {.observed = true}; }

 private:
  HeadScores score(const LayerInput& in) const override {
    const int n_group = in.n_head / static_cast<int>(in.kv.size());
    HeadScores s(in.n_head);
    for (int h = 0; h < in.n_head; ++h) {
      const KvHeadView& kv = in.kv[h / n_group];
      const int32_t last = kv.n > 0 ? kv.pos[kv.n - 1] : 0;
      const int64_t n_queries = last - in.first_new_pos + 1;
      s[h].resize(static_cast<size_t>(kv.n));
      for (int64_t j = 0; j < kv.n; ++j) {
        const int64_t seen_by = n_queries - std::max<int64_t>(0, kv.pos[j] - in.first_new_pos);
        s[h][j] = in.observed[h][j] / static_cast<float>(std::max<int64_t>(1, seen_by));
      }
    }
    return reduce_gqa(s, static_cast<int>(in.kv.size()), cfg_.gqa);
  }
};

}  // namespace

std::unique_ptr<Press> make_h2o_press(const PressConfig& c) { return std::make_unique<H2oPress>(c); }

}  // namespace snapkv

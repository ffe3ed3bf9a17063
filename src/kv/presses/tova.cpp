// tova: the entries the last prompt token attends to most, averaged over all query heads (as
// kvpress's TOVAPress); the last entry is always kept.
#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class TovaPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 1; }

 private:
  HeadScores score(const LayerInput& in) const override {
    const HeadScores per_query = window_attention(in, 1);
    const int n_stored = static_cast<int>(in.kv.size());
    // Heads of equal length share the all-head mean; otherwise each reduces over its group.
    bool equal = true;
    for (const KvHeadView& h : in.kv) equal &= h.n == in.kv[0].n;
    HeadScores s = equal ? HeadScores(n_stored, reduce_gqa(per_query, 1, GqaReduce::kMean)[0])
                         : reduce_gqa(per_query, n_stored, GqaReduce::kMean);
    for (std::vector<float>& h : s) {
      if (!h.empty()) h.back() = kKeepAlways;
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_tova_press(const PressConfig& c) { return std::make_unique<TovaPress>(c); }

}  // namespace snapkv

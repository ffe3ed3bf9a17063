// Drafting with a smaller model of the same vocabulary: its greedy continuation, k tokens a pass.
#include <algorithm>

#include "engine/drafter.h"
#include "engine/sampler.h"

namespace snapkv {
namespace {

class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(Sequence& draft) : d_(draft) {}

 private:
  void follow(std::span<const int32_t> history) override {
    if (history.size() <= static_cast<size_t>(d_.n_ctx())) catch_up(history, history.size());
  }

  std::vector<int32_t> draft(std::span<const int32_t> history, int k) override {
    if (history.empty() || k < 1) return {};
    k = std::min<int64_t>(k, static_cast<int64_t>(d_.n_ctx()) - history.size() + 1);
    if (k < 1) return {};
    catch_up(history, history.size() - 1);  // at least one token runs, for fresh logits
    std::vector<int32_t> out;
    for (int i = 0; i < k; ++i) {
      out.push_back(greedy_token(d_.logits()));
      if (i + 1 < k) d_.decode(out.back());
    }
    return out;
  }

  // Makes the draft hold history: it keeps the longest prefix of its tokens that history starts
  // with, at most max_keep of them, and runs the rest (pressed when it runs from the start).
  void catch_up(std::span<const int32_t> history, size_t max_keep) {
    const std::vector<int32_t>& held = d_.tokens();
    const size_t common = std::mismatch(held.begin(), held.end(), history.begin(), history.end()).first - held.begin();
    const size_t keep = std::min(common, max_keep);
    if (keep < held.size()) d_.truncate(static_cast<int>(keep));
    if (keep < history.size()) d_.prefill(history.subspan(keep), {}, /*compress=*/keep == 0);
  }

  Sequence& d_;
};

}  // namespace

std::unique_ptr<Drafter> model_drafter(Sequence& draft) { return std::make_unique<ModelDrafter>(draft); }

}  // namespace snapkv

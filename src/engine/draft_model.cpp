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
  std::vector<int32_t> draft(std::span<const int32_t> history, int k) override {
    if (history.empty() || k < 1) return {};
    // The draft keeps what history starts with, and runs at least one token for fresh logits.
    const std::vector<int32_t>& held = d_.tokens();
    const size_t common = std::mismatch(held.begin(), held.end(), history.begin(), history.end()).first - held.begin();
    const size_t keep = std::min(common, history.size() - 1);
    if (keep < held.size()) d_.truncate(static_cast<int>(keep));
    const std::span<const int32_t> rest = history.subspan(keep);
    k = std::min<int64_t>(k, static_cast<int64_t>(d_.n_ctx()) - history.size() + 1);
    if (k < 1) return {};
    d_.prefill(rest, {}, /*compress=*/keep == 0);
    std::vector<int32_t> out;
    for (int i = 0; i < k; ++i) {
      out.push_back(greedy_token(d_.logits()));
      if (i + 1 < k) d_.decode(out.back());
    }
    return out;
  }

  Sequence& d_;
};

}  // namespace

std::unique_ptr<Drafter> model_drafter(Sequence& draft) { return std::make_unique<ModelDrafter>(draft); }

}  // namespace snapkv

// Prompt-lookup drafting: long prompts (documents, code, earlier turns) are often quoted back, so
// the tokens after an earlier occurrence of the latest few tokens are a free guess.
#include <algorithm>

#include "engine/drafter.h"

namespace snapkv {
namespace {

class PromptLookup final : public Drafter {
 public:
  PromptLookup(int ngram_min, int ngram_max) : ngram_min_(ngram_min), ngram_max_(ngram_max) {}

 private:
  std::vector<int32_t> draft(std::span<const int32_t> history, int k) override {
    const int64_t n = static_cast<int64_t>(history.size());
    for (int64_t g = std::min<int64_t>(ngram_max_, n - 1); g >= ngram_min_; --g) {
      const std::span<const int32_t> tail = history.last(static_cast<size_t>(g));
      for (int64_t at = n - g - 1; at >= 0; --at) {
        if (!std::equal(tail.begin(), tail.end(), history.begin() + at)) continue;
        const int64_t from = at + g, take = std::min<int64_t>(k, n - from);
        return {history.begin() + from, history.begin() + from + take};
      }
    }
    return {};
  }

  int ngram_min_, ngram_max_;
};

}  // namespace

std::unique_ptr<Drafter> prompt_lookup_drafter(int ngram_min, int ngram_max) {
  return std::make_unique<PromptLookup>(ngram_min, ngram_max);
}

}  // namespace snapkv

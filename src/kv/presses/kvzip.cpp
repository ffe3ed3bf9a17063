// kvzip: the entries the model reads most while it repeats the context (KVzip, as kvpress's
// KVzipPress): each entry's score is the largest attention probability any query of the
// reconstruction passes (kv/reconstruction.h) gave it, over the query heads of its group; the
// first `sinks` entries are always kept. No question is needed, so what it keeps serves any later
// question about the context.
#include <algorithm>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class KvzipPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }
  PressNeeds needs() const override { return {.reconstruct = true}; }

 private:
  HeadScores score(const LayerInput& in) const override {
    const int n_group = in.n_head / static_cast<int>(in.kv.size());
    HeadScores s(in.kv.size());
    for (size_t h = 0; h < s.size(); ++h) {
      s[h].assign(static_cast<size_t>(in.kv[h].n), 0.0f);
      for (int g = 0; g < n_group; ++g) {
        const std::vector<float>& o = in.observed[h * n_group + g];
        for (size_t j = 0; j < s[h].size(); ++j) s[h][j] = std::max(s[h][j], o[j]);
      }
      for (size_t j = 0; j < s[h].size() && in.kv[h].pos[j] < cfg_.sinks; ++j) s[h][j] = kKeepAlways;
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_kvzip_press(const PressConfig& c) { return std::make_unique<KvzipPress>(c); }

}  // namespace snapkv

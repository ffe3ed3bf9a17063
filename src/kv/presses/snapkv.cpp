// snapkv: each KV head keeps the window and the capacity - window prefix entries that the window
// queries attend to most (pooled, reduced over the head's query group; snapkv_scores in
// press_scores.h, the formula in docs/presses.md).
#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class SnapKvPress final : public Press {
 public:
  using Press::Press;

 private:
  HeadScores score(const LayerInput& in) const override {
    return snapkv_scores(cfg_, in);
  }
};

}  // namespace

std::unique_ptr<Press> make_snapkv_press(const PressConfig& c) { return std::make_unique<SnapKvPress>(c); }

}  // namespace snapkv

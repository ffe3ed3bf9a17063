// full: keeps every entry (the uncompressed baseline).
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class FullPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }

 private:
  HeadScores score(const LayerInput&) const override { return {}; }  // never asked: full keeps everything
};

}  // namespace

std::unique_ptr<Press> make_full_press(const PressConfig& c) { return std::make_unique<FullPress>(c); }

}  // namespace snapkv

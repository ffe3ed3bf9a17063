// streaming_llm: the first `sinks` entries (attention sinks) and the most recent capacity - sinks.
#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class StreamingLlmPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }

 private:
  HeadScores score(const LayerInput& in) const override {
    HeadScores s(in.kv.size());
    for (size_t h = 0; h < s.size(); ++h) {
      s[h].resize(static_cast<size_t>(in.kv[h].n));
      for (size_t j = 0; j < s[h].size(); ++j) {
        s[h][j] = static_cast<int64_t>(j) < cfg_.sinks ? kKeepAlways : static_cast<float>(j);
      }
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_streaming_llm_press(const PressConfig& c) {
  return std::make_unique<StreamingLlmPress>(c);
}

}  // namespace snapkv

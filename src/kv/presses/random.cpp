// random: uniformly random entries per head, reproducible from the seed, layer and head.
#include <random>

#include "kv/press_scores.h"
#include "kv/presses/presses.h"

namespace snapkv {
namespace {

class RandomPress final : public Press {
 public:
  using Press::Press;
  int window() const override { return 0; }

 private:
  HeadScores score(const LayerInput& in) const override {
    HeadScores s(in.kv.size());
    for (size_t h = 0; h < s.size(); ++h) {
      std::seed_seq seq{cfg_.seed, static_cast<uint64_t>(in.layer), static_cast<uint64_t>(h)};
      std::mt19937_64 rng(seq);
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      s[h].resize(static_cast<size_t>(in.kv[h].n));
      for (float& x : s[h]) x = u(rng);
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Press> make_random_press(const PressConfig& c) { return std::make_unique<RandomPress>(c); }

}  // namespace snapkv

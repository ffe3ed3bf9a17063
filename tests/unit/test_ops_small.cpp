// Checks of the small ops: RMSNorm, RoPE (both pairings), SwiGLU, by hand and against double;
// argmax against std::max_element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "support/simd_targets.h"

namespace snapkv {
namespace {

TEST(RmsNorm, HandComputed) {
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {1, 1, 2, 0.5f};
  std::vector<float> y(4);
  rms_norm(x.data(), w.data(), y.data(), 1, 4, 0.0f);
  const float s = 1.0f / std::sqrt((1 + 4 + 9 + 16) / 4.0f);
  EXPECT_FLOAT_EQ(y[0], 1 * s);
  EXPECT_FLOAT_EQ(y[2], 3 * s * 2);
  EXPECT_FLOAT_EQ(y[3], 4 * s * 0.5f);
}

TEST(Rope, NormalRotatesAdjacentPairs) {
  RopeParams p;
  p.mode = RopeMode::kNormal;
  p.n_rot = 4;
  p.freq_base = 100.0;
  const auto inv = p.inv_freq();
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_DOUBLE_EQ(inv[1], 0.1);  // 100^(-2/4)
  std::vector<float> x = {1, 0, 1, 0};
  const int32_t pos = 2;
  rope(x.data(), rope_angles(inv, &pos, 1), 0, 1, 1, 4, p.mode);
  EXPECT_NEAR(x[0], std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0), 1e-6);
  EXPECT_NEAR(x[2], std::cos(0.2), 1e-6);
  EXPECT_NEAR(x[3], std::sin(0.2), 1e-6);
}

TEST(Rope, NeoxRotatesHalvesAndKeepsUnrotatedTail) {
  RopeParams p;
  p.mode = RopeMode::kNeox;
  p.n_rot = 4;
  p.freq_base = 100.0;
  std::vector<float> x = {1, 1, 0, 0, 7, 8};  // head_dim 6, last 2 not rotated
  const int32_t pos = 3;
  rope(x.data(), rope_angles(p.inv_freq(), &pos, 1), 0, 1, 1, 6, p.mode);
  EXPECT_NEAR(x[0], std::cos(3.0), 1e-6);
  EXPECT_NEAR(x[2], std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[1], std::cos(0.3), 1e-6);
  EXPECT_NEAR(x[3], std::sin(0.3), 1e-6);
  EXPECT_EQ(x[4], 7);
  EXPECT_EQ(x[5], 8);
}

TEST(Rope, RotatesByTheAnglesOfTheGivenTokens) {
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = 100.0;
  const int32_t pos[] = {2, 5};
  const RopeAngles a = rope_angles(p.inv_freq(), pos, 2);
  ASSERT_EQ(a.half, 2);
  EXPECT_EQ(a.cos[2], static_cast<float>(std::cos(5.0)));
  EXPECT_EQ(a.sin[3], static_cast<float>(std::sin(0.5)));
  std::vector<float> x = {1, 0, 1, 0};  // one row: the second token's
  rope(x.data(), a, 1, 1, 1, 4, p.mode);
  EXPECT_NEAR(x[0], std::cos(5.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(5.0), 1e-6);
  EXPECT_NEAR(x[2], std::cos(0.5), 1e-6);
  EXPECT_NEAR(x[3], std::sin(0.5), 1e-6);
}

TEST(Rope, LinearScalingAndFreqFactors) {
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = 100.0;
  p.freq_scale = 0.5;
  p.freq_factors = {1.0f, 4.0f};
  const auto inv = p.inv_freq();
  EXPECT_DOUBLE_EQ(inv[0], 0.5);
  EXPECT_DOUBLE_EQ(inv[1], 0.1 * 0.5 / 4.0);
}

// On every target, lengths around the vector widths, against std::max_element: the first of
// equal largest values, wherever it lies.
TEST(Argmax, FindsWhatMaxElementFindsOnEveryTarget) {
  test::for_each_target([] {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> small(-3, 3);  // few values: many ties
    for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 100, 49152}) {
      for (int rep = 0; rep < 4; ++rep) {
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = static_cast<float>(small(rng)) * 0.5f;
        if (rep == 1) x.back() = 10.0f;  // the largest last, in the scalar tail
        const auto want = std::max_element(x.begin(), x.end()) - x.begin();
        EXPECT_EQ(argmax(x.data(), n), want) << "n " << n << " rep " << rep;
      }
    }
  });
}

TEST(Argmax, PassesOverNaN) {
  const float nan = std::nanf("");
  const std::vector<float> x = {nan, 1.0f, nan, 3.0f, -HUGE_VALF, 3.0f, nan};
  EXPECT_EQ(argmax(x.data(), 7), 3);
  const std::vector<float> all_nan(40, nan);
  EXPECT_EQ(argmax(all_nan.data(), 40), 0);
  EXPECT_EQ(argmax(x.data(), 0), 0);
}

TEST(SwiGlu, HandComputed) {
  std::vector<float> g = {0.0f, 1.0f, -2.0f};
  const std::vector<float> u = {3.0f, 2.0f, 1.0f};
  silu_mul_inplace(g.data(), u.data(), 3);
  EXPECT_FLOAT_EQ(g[0], 0.0f);
  EXPECT_NEAR(g[1], 1.0 / (1.0 + std::exp(-1.0)) * 2.0, 1e-6);
  EXPECT_NEAR(g[2], -2.0 / (1.0 + std::exp(2.0)), 1e-6);
}

// A gated activation's vector loop on every target, from gates far below -88 (where exp
// overflows) to far above, and a NaN: y = kernel(gate) * up against want(g, up) in double, within
// tolerance(g, up, want).
template <class Want, class Tolerance>
void check_gated(void (*kernel)(float*, const float*, int64_t), Want want, Tolerance tolerance) {
  test::for_each_target([&] {
    std::vector<float> gate, up;
    for (int i = 0; i < 131; ++i) {
      gate.push_back(-120.0f + 1.1f * static_cast<float>(i));
      up.push_back(0.5f + 0.01f * static_cast<float>(i));
    }
    gate[17] = std::nanf("");
    std::vector<float> y = gate;
    kernel(y.data(), up.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < y.size(); ++i) {
      if (i == 17) {
        EXPECT_TRUE(std::isnan(y[i]));
        continue;
      }
      const double g = gate[i], w = want(g, up[i]);
      EXPECT_NEAR(y[i], w, tolerance(g, up[i], w)) << "gate " << g;
    }
  });
}

TEST(SwiGlu, MatchesDoubleOnEveryTarget) {
  check_gated(
      silu_mul_inplace, [](double g, double up) { return g / (1.0 + std::exp(-g)) * up; },
      [](double, double, double want) { return 2e-7 * std::abs(want) + 1e-30; });
}

// GeGLU's gate against GELU's tanh form (the kernel computes it through exp).
TEST(GeGlu, MatchesTheTanhFormOnEveryTarget) {
  check_gated(
      gelu_tanh_mul_inplace,
      [](double g, double up) { return 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))) * up; },
      // 1 + tanh(u) cancels in double for gates far below 0, to about 1e-16 of g * up.
      [](double g, double up, double want) { return 1e-6 * std::abs(want) + 1e-12 * std::abs(g * up); });
}

}  // namespace
}  // namespace snapkv

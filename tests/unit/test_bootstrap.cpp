// The bootstrap interval of a mean, checked against what statistics says it must do: it is one
// point for constant data, its width follows the normal theory's 2 x 1.96 x s / sqrt(n) on a large
// sample, and over many samples from a known distribution it covers the true mean about 95 % of
// the time.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "snapkv/error.h"
#include "snapkv/eval.h"

namespace snapkv {
namespace {

TEST(Bootstrap, ConstantDataIsOnePointAndEmptyDataIsZero) {
  const std::vector<double> same(25, 7.5);
  const MeanInterval ci = bootstrap_mean_interval(same);
  EXPECT_DOUBLE_EQ(ci.lo, 7.5);
  EXPECT_DOUBLE_EQ(ci.hi, 7.5);
  const MeanInterval none = bootstrap_mean_interval({});
  EXPECT_EQ(none.lo, 0);
  EXPECT_EQ(none.hi, 0);
  EXPECT_THROW(bootstrap_mean_interval(same, 1.0), Error);
  EXPECT_THROW(bootstrap_mean_interval(same, 0.95, 0), Error);
}

TEST(Bootstrap, WidthFollowsTheNormalTheoryOnALargeSample) {
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal(10, 2);
  std::vector<double> x(400);
  for (double& v : x) v = normal(gen);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
  double ss = 0;
  for (const double v : x) ss += (v - mean) * (v - mean);
  const double se = std::sqrt(ss / (x.size() - 1) / x.size());
  const MeanInterval ci = bootstrap_mean_interval(x);
  EXPECT_LT(ci.lo, mean);
  EXPECT_GT(ci.hi, mean);
  EXPECT_NEAR(ci.hi - ci.lo, 2 * 1.96 * se, 0.15 * 2 * 1.96 * se);
  EXPECT_NEAR((ci.lo + ci.hi) / 2, mean, 0.2 * se);
  // Seeded: the same interval again.
  const MeanInterval again = bootstrap_mean_interval(x);
  EXPECT_EQ(again.lo, ci.lo);
  EXPECT_EQ(again.hi, ci.hi);
}

TEST(Bootstrap, CoversTheTrueMeanAboutNinetyFivePercentOfTheTime) {
  // 300 samples of 40 scores from an exponential distribution (skewed, as per-case scores are),
  // true mean 1: the percentile bootstrap covers it a little less often than its nominal 95 %.
  std::mt19937_64 gen(11);
  std::exponential_distribution<double> expo(1.0);
  int covered = 0;
  const int trials = 300;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(40);
    for (double& v : x) v = expo(gen);
    const MeanInterval ci = bootstrap_mean_interval(x, 0.95, 1000, static_cast<uint64_t>(t) + 1);
    covered += ci.lo <= 1.0 && 1.0 <= ci.hi;
  }
  const double rate = static_cast<double>(covered) / trials;
  EXPECT_GT(rate, 0.88);
  EXPECT_LT(rate, 0.99);
}

}  // namespace
}  // namespace snapkv

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/sampler.h"
#include "util/error.h"

namespace snapkv {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.9f, -1.0f, 0.0f};

TEST(Sampler, GreedyTakesArgmaxAndLowestIdOnTies) {
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.sample(kLogits, {}), 1);
  const std::vector<float> tie = {5.0f, 5.0f};
  EXPECT_EQ(s.sample(tie, {}), 0);
  EXPECT_EQ(greedy_token(kLogits), 1);
  const std::vector<float> late_tie = {-2.0f, 4.0f, 1.0f, 4.0f};
  EXPECT_EQ(greedy_token(late_tie), 1);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  SamplingParams p;
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  const std::vector<int32_t> hist = {1};
  EXPECT_EQ(s.sample(kLogits, hist), 2);  // 3.0 / 2 = 1.5 < 2.9
  // A negative logit gets more negative: token 0 (1.0) must stay ahead of token 3 (-1 * 2).
  const std::vector<float> neg = {-0.5f, -0.4f};
  const std::vector<int32_t> h1 = {1};
  EXPECT_EQ(Sampler(p).sample(neg, h1), 0);  // -0.4 * 2 = -0.8 < -0.5
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  SamplingParams p;
  p.temperature = 5.0f;
  p.top_k = 1;
  Sampler s(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(kLogits, {}), 1);
}

TEST(Sampler, MinPAndTopPRestrictTheSupport) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = 0.5f;  // keeps tokens 1 and 2 only (e^-0.1 > 0.5, e^-2 < 0.5)
  p.seed = 3;
  Sampler s(p);
  for (int i = 0; i < 200; ++i) {
    const int id = s.sample(kLogits, {});
    EXPECT_TRUE(id == 1 || id == 2) << id;
  }
  SamplingParams q;
  q.temperature = 1.0f;
  q.top_p = 0.3f;  // p(token 1) alone is about 0.46 >= 0.3
  Sampler t(q);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.sample(kLogits, {}), 1);
}

TEST(Sampler, SeedMakesDrawsReproducibleAndFollowsTheDistribution) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  Sampler a(p), b(p);
  std::map<int, int> counts;
  for (int i = 0; i < 4000; ++i) {
    const int x = a.sample(kLogits, {});
    EXPECT_EQ(x, b.sample(kLogits, {}));
    counts[x]++;
  }
  // softmax(kLogits)[1] = e^3 / (e^1 + e^3 + e^2.9 + e^-1 + e^0) = 0.4728
  EXPECT_NEAR(counts[1] / 4000.0, 0.4728, 0.03);
}

// Speculative sampling: whichever token was drafted (the likeliest, an unlikely one, one the
// filters drop), the token sample_given_draft returns follows the distribution sample() draws
// from. Pearson's chi-square over 40,000 draws against that distribution, computed here in
// double (top-k 4 at temperature 0.7 over kLogits), stays under the 0.1 % critical value for 3
// degrees of freedom (16.27); a rule that kept every draft, or redrew from p without removing
// the draft, gives values in the hundreds to thousands.
TEST(Sampler, SpeculativeSamplingFollowsTheTargetDistributionWhateverWasDrafted) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 4;  // token 3 (logit -1) is out
  p.seed = 7;
  std::vector<double> want(kLogits.size(), 0.0);
  double z = 0;
  for (int i : {0, 1, 2, 4}) z += (want[i] = std::exp(kLogits[i] / 0.7));
  for (double& w : want) w /= z;
  for (const int32_t draft : {1, 2, 4, 3}) {
    Sampler s(p);
    constexpr int kDraws = 40000;
    std::vector<int> counts(kLogits.size(), 0);
    for (int i = 0; i < kDraws; ++i) counts[s.sample_given_draft(kLogits, {}, draft)]++;
    EXPECT_EQ(counts[3], 0) << "draft " << draft;
    double chi2 = 0;
    for (int i : {0, 1, 2, 4}) chi2 += std::pow(counts[i] - kDraws * want[i], 2) / (kDraws * want[i]);
    EXPECT_LT(chi2, 16.27) << "draft " << draft;
  }
  // Greedy: the greedy token, whatever the draft.
  Sampler g(SamplingParams{});
  EXPECT_EQ(g.sample_given_draft(kLogits, {}, 2), 1);
  EXPECT_EQ(g.sample_given_draft(kLogits, {}, 1), 1);
}

TEST(Sampler, InvalidParametersAreRejected) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_THROW(Sampler{p}, Error);
  p = {};
  p.temperature = -1.0f;
  EXPECT_NE(p.validate(), "");
  p = {};
  p.min_p = 1.0f;
  EXPECT_NE(p.validate(), "");
}

}  // namespace
}  // namespace snapkv

// The measurements behind `snapkv analyze`: the vote, one query's attention and the hit rate on an
// attention pattern built so that every probability is known by hand, the overlap of two votes,
// and where a text lies in a prompt's tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/analysis/observation.h"
#include "support/eval_model.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

// One head of size 4 over 11 entries at positions 0..10. Key j is (ln a_j, ln b_j, 0, 0); a query
// (2, 0, 0, 0) scores q.k / sqrt(4) = ln a_j, so its attention on entry j is a_j / sum(a) over the
// entries it sees; a query (0, 2, 0, 0) likewise gives b_j / sum(b).
struct Pattern {
  static constexpr int kD = 4, kN = 11;
  std::vector<float> keys, values = std::vector<float>(kN * kD, 0.0f);
  std::vector<int32_t> pos;
  std::vector<float> q;  // recorded queries: the window (positions 8, 9), then one generated (10)
  std::vector<int32_t> q_pos = {8, 9, 10};
  KvHeadView head;
  ThreadPool pool{1};

  Pattern(const std::vector<double>& a, const std::vector<double>& b) {
    for (int j = 0; j < kN; ++j) {
      keys.insert(keys.end(), {static_cast<float>(std::log(a[j])), static_cast<float>(std::log(b[j])), 0, 0});
      pos.push_back(j);
    }
    q = {2, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0};
    head = {kN, keys.data(), values.data(), pos.data(), KvType::kF32};
  }
  // Only the first n recorded queries (the window alone: 2).
  LayerInput input(int64_t n) const {
    LayerInput in;
    in.n_layer = 1;
    in.n_head = 1;
    in.head_dim = kD;
    in.kv = std::span<const KvHeadView>(&head, 1);
    in.q_window = q.data();
    in.window_pos = q_pos.data();
    in.n_window = n;
    in.pool = const_cast<ThreadPool*>(&pool);
    return in;
  }
};

TEST(Observation, HitRateOnAHandBuiltPatternIsTwoThirds) {
  // Window queries weigh entries 1 and 4 most among the prefix (positions 0..7): the vote with
  // p = 0.25 keeps floor(0.25 * 8) = 2 of them: {1, 4}.
  const std::vector<double> a = {1, 8, 1, 1, 6, 1, 1, 1, 1, 1, 1};
  // The generated query (position 10) gives entries 0, 1 and 4 each 10 / 40 = 0.25, the other
  // prefix entries 1 / 40 = 0.025, entry 10 itself 3 / 40.
  const std::vector<double> b = {10, 10, 1, 1, 10, 1, 1, 1, 1, 1, 3};
  const Pattern p(a, b);
  const std::vector<std::vector<int32_t>> voted = vote(p.input(2), /*w=*/2, /*prefix=*/8, /*top_p=*/0.25);
  ASSERT_EQ(voted.size(), 1u);
  EXPECT_EQ(voted[0], (std::vector<int32_t>{1, 4}));

  const HeadScores probs = attention_sums(p.input(3), 2, 1);
  ASSERT_EQ(probs[0].size(), 11u);
  for (int j = 0; j < 11; ++j) EXPECT_NEAR(probs[0][j], b[j] / 40, 1e-6) << j;

  // theta 0.05: significant prefix entries {0, 1, 4}; voted among them {1, 4}: H = 2 / 3.
  Hits h;
  count_hits(std::span<const float>(probs[0]).first(8), voted[0], 0.05, h);
  EXPECT_EQ(h.significant, 3);
  EXPECT_EQ(h.hit, 2);
  EXPECT_DOUBLE_EQ(h.rate(), 2.0 / 3.0);
  // theta 0.3: nothing is significant, and the rate is undefined rather than 0 or 1.
  Hits none;
  count_hits(std::span<const float>(probs[0]).first(8), voted[0], 0.3, none);
  EXPECT_EQ(none.significant, 0);
  EXPECT_TRUE(std::isnan(none.rate()));
  // theta 0.02: all eight prefix entries are significant, two are voted: 2 / 8 more.
  count_hits(std::span<const float>(probs[0]).first(8), voted[0], 0.02, h);
  EXPECT_EQ(h.significant, 11);
  EXPECT_EQ(h.hit, 4);
}

TEST(Observation, TheVoteSumsTheWindowAndSeesOnlyThePrefix) {
  // The window's own entries (8, 9) weigh most, but only the prefix (0..7) is voted on.
  const std::vector<double> a = {1, 2, 3, 1, 1, 1, 1, 1, 50, 90, 1};
  const Pattern p(a, std::vector<double>(11, 1.0));
  EXPECT_EQ(vote(p.input(2), 2, 8, 0.25)[0], (std::vector<int32_t>{1, 2}));
  // top p rounds down: 0.2 * 8 = 1.6 keeps one position.
  EXPECT_EQ(vote(p.input(2), 2, 8, 0.2)[0], (std::vector<int32_t>{2}));
}

TEST(Observation, OverlapShareIsTheSharedPartOfTheFirst) {
  EXPECT_DOUBLE_EQ(overlap_share(std::vector<int32_t>{1, 4, 7}, std::vector<int32_t>{4, 7, 9}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(overlap_share(std::vector<int32_t>{1, 4}, std::vector<int32_t>{2, 3, 5}), 0.0);
  EXPECT_DOUBLE_EQ(overlap_share(std::vector<int32_t>{2}, std::vector<int32_t>{1, 2, 3}), 1.0);
  EXPECT_TRUE(std::isnan(overlap_share(std::vector<int32_t>{}, std::vector<int32_t>{1})));
}

TEST(Observation, FindTextTokensCoversTheTextInTheTokens) {
  const Tokenizer& tok = *test::eval_model().tok;
  const std::vector<int32_t> ids = tok.encode("The pass key is 4144382. Remember it. The pass key is 777.", true);
  const auto [first, last] = find_text_tokens(tok, ids, ids.size(), "4144382", /*last=*/false);
  ASSERT_GE(first, 0);
  ASSERT_GT(last, first);
  // The tokens found hold the digits, and no fewer tokens would.
  const std::string text = tok.decode(std::vector<int32_t>(ids.begin() + first, ids.begin() + last));
  EXPECT_NE(text.find("4144382"), std::string::npos) << text;
  EXPECT_EQ(tok.decode(std::vector<int32_t>(ids.begin() + first + 1, ids.begin() + last)).find("4144382"),
            std::string::npos);
  EXPECT_EQ(tok.decode(std::vector<int32_t>(ids.begin() + first, ids.begin() + last - 1)).find("4144382"),
            std::string::npos);
  // First and last occurrences differ; text past `end` is not searched.
  const auto first_key = find_text_tokens(tok, ids, ids.size(), "pass key", false);
  const auto last_key = find_text_tokens(tok, ids, ids.size(), "pass key", true);
  EXPECT_LT(first_key.first, last_key.first);
  EXPECT_EQ(find_text_tokens(tok, ids, static_cast<size_t>(first), "4144382", false), std::make_pair(-1, -1));
  EXPECT_EQ(find_text_tokens(tok, ids, ids.size(), "not there", false), std::make_pair(-1, -1));
}

}  // namespace
}  // namespace snapkv

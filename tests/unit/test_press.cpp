// Presses on hand-made tensors: pooling edges, the window's causal mask, GQA reduction before
// and after pooling, the skip rule, PyramidKV layer budgets and Ada-KV head budgets, against
// values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "kv/press_budget.h"
#include "kv/press_scores.h"
#include "kv/presses/presses.h"
#include "kv/token_runs.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(Pool1d, MaxPadsWithMinusInfinity) {
  const std::vector<float> s = {-5, -1, -7, -2, -9};
  // kernel 3: windows [-5,-1], [-5,-1,-7], [-1,-7,-2], [-7,-2,-9], [-2,-9]
  EXPECT_EQ(pool1d(s, 3, PoolKind::kMax), (std::vector<float>{-1, -1, -1, -2, -2}));
  // kernel 5 at the edges sees only what exists (zero padding would give 0 here)
  EXPECT_EQ(pool1d(s, 5, PoolKind::kMax), (std::vector<float>{-1, -1, -1, -1, -2}));
}

TEST(Pool1d, AvgCountsPaddingInTheDivisor) {
  const std::vector<float> s = {3, 6, 9, 12};
  // kernel 3, count_include_pad: edges divide by 3, not by the 2 real elements.
  const std::vector<float> got = pool1d(s, 3, PoolKind::kAvg);
  const std::vector<float> want = {(3 + 6) / 3.0f, (3 + 6 + 9) / 3.0f, (6 + 9 + 12) / 3.0f, (9 + 12) / 3.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
  EXPECT_EQ(pool1d(s, 1, PoolKind::kAvg), s);
}

TEST(GqaReduce, MeanMaxAndPerQueryHead) {
  const HeadScores s = {{1, 4}, {3, 2}, {10, 0}, {0, 10}};  // 4 query heads, 2 stored heads
  EXPECT_EQ(reduce_gqa(s, 2, GqaReduce::kMean), (HeadScores{{2, 3}, {5, 5}}));
  EXPECT_EQ(reduce_gqa(s, 2, GqaReduce::kMax), (HeadScores{{3, 4}, {10, 10}}));
  EXPECT_EQ(reduce_gqa(s, 4, GqaReduce::kPerQueryHead), s);
  EXPECT_ANY_THROW(reduce_gqa(s, 2, GqaReduce::kPerQueryHead));
}

TEST(GqaReduce, ReducingAfterMaxPoolingDiffersFromBefore) {
  // Two query heads of one KV head. Reducing with max AFTER pooling (ours, kvpress) and BEFORE
  // pooling (the official repo's order on repeated heads) differ for max pooling:
  const std::vector<float> a = {0, 0, 9, 0, 0}, b = {1, 0, 0, 0, 2};
  const HeadScores after = reduce_gqa({pool1d(a, 3, PoolKind::kMax), pool1d(b, 3, PoolKind::kMax)}, 1, GqaReduce::kMean);
  const HeadScores before = {pool1d(reduce_gqa({a, b}, 1, GqaReduce::kMean)[0], 3, PoolKind::kMax)};
  EXPECT_EQ(after[0], (std::vector<float>{0.5f, 5.0f, 4.5f, 5.5f, 1.0f}));
  EXPECT_EQ(before[0], (std::vector<float>{0.5f, 4.5f, 4.5f, 4.5f, 1.0f}));
}

TEST(TopK, HighestScoresInPositionOrderTiesToTheEarlier) {
  const std::vector<float> s = {1, 5, 3, 5, kKeepAlways, 0};
  EXPECT_EQ(top_k(s, 3), (std::vector<int32_t>{1, 3, 4}));
  EXPECT_EQ(top_k(s, 2), (std::vector<int32_t>{1, 4}));  // 5 at 1 and 3 tie: the earlier wins
  EXPECT_EQ(top_k(s, 10).size(), 6u);
  EXPECT_TRUE(top_k(s, 0).empty());
}

// ChunkKV: whole chunks, ranked by the mean over the chunk of the scores summed over the heads,
// the same chunks in every head.
TEST(Chunks, WholeChunksTheSameInEveryHead) {
  // Chunks of 3: [0, 3) mean 2, [3, 6) mean 2, [6, 9) mean 5/3, [9] mean 9.
  const HeadScores s = {{1, 1, 1, 0, 0, 0, 5, 0, 0, 9}, {1, 1, 1, 0, 0, 6, 0, 0, 0, 0}};
  PressConfig c;
  c.chunk = 3;
  EXPECT_EQ(select_top(c, s, 7), (Selection{{0, 1, 2, 3, 4, 5, 9}, {0, 1, 2, 3, 4, 5, 9}}));  // ties: the earlier
  EXPECT_EQ(select_top(c, s, 6), (Selection{{0, 1, 2, 9}, {0, 1, 2, 9}}));  // the next chunk does not fit
  c.ratio = 0.5;  // kvpress's count: int(4 chunks x 0.5) = 2, whatever n says
  EXPECT_EQ(select_top(c, s, 100), (Selection{{0, 1, 2, 9}, {0, 1, 2, 9}}));
  c.ratio = 0;
  HeadScores window = s;
  window[0][7] = kKeepAlways;  // a chunk holding an entry kept always is kept
  EXPECT_EQ(select_top(c, window, 7), (Selection{{0, 1, 2, 6, 7, 8, 9}, {0, 1, 2, 6, 7, 8, 9}}));
  // Heads of different lengths, or shorter than a chunk: single entries.
  EXPECT_EQ(select_top(c, {{1, 2, 3, 0}, {1, 2}}, 1), (Selection{{2}, {1}}));
  EXPECT_EQ(select_top(c, {{1, 2}, {2, 1}}, 1), (Selection{{1}, {0}}));
  c.chunk = 0;
  EXPECT_EQ(select_top(c, s, 1), (Selection{{9}, {5}}));
}

// Token runs from per-id flags: a run starts at a token beginning with whitespace, after one
// ending with it, at a control token, and every max_len tokens.
TEST(TokenRuns, StartAtWhitespaceControlTokensAndTheCap) {
  // ids: 0 = " The" (space first), 1 = "4" (joins), 2 = "\n" (both), 3 = "<ctrl>" (both), 4 = "x" (joins)
  const std::vector<uint8_t> flags = {kBreakBefore, 0, kBreakBefore | kBreakAfter, kBreakBefore | kBreakAfter, 0};
  const std::vector<int32_t> tokens = {0, 1, 1, 1, 2, 4, 4, 3, 4, 0, 4, 4, 4, 4, 4, 9};
  //                                   0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
  EXPECT_EQ(token_run_starts(tokens, flags, 3),
            (std::vector<int32_t>{0, 0, 0, 3, 4, 5, 5, 7, 8, 9, 9, 9, 12, 12, 12, 15}));
  EXPECT_EQ(token_run_starts(tokens, flags, 100),
            (std::vector<int32_t>{0, 0, 0, 0, 4, 5, 5, 7, 8, 9, 9, 9, 9, 9, 9, 15}));  // 9: an unknown id stands alone
}

// top_runs: protected entries first, then whole runs by their best entry while they fit, then
// the best single entries in the room left; entries map to runs through their positions.
TEST(TokenRuns, TopRunsKeepsWholeRunsByTheirBestEntry) {
  // Entries hold positions 0..9; runs [0, 1], [2, 3, 4], [5], [6, 7], [8], [9].
  const std::vector<int32_t> run_start = {0, 0, 2, 2, 2, 5, 6, 6, 8, 9};
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> s = {0.1f, 0.2f, 0.1f, 0.9f, 0.0f, 0.8f, 0.3f, 0.0f, 0.5f, kKeepAlways};
  // 9 protected; run [2, 4] (best 0.9) takes 3; [5] (0.8) 1; [8] (0.5) 1; [6, 7] (0.3) fits in 6.
  EXPECT_EQ(top_runs(s, pos.data(), run_start, 8), (std::vector<int32_t>{2, 3, 4, 5, 6, 7, 8, 9}));
  // n = 5: after 9 and [2, 4], [5] fits, then nothing whole: no room left.
  EXPECT_EQ(top_runs(s, pos.data(), run_start, 5), (std::vector<int32_t>{2, 3, 4, 5, 9}));
  // n = 3: [2, 4] does not fit after 9; [5] and [8] do.
  EXPECT_EQ(top_runs(s, pos.data(), run_start, 3), (std::vector<int32_t>{5, 8, 9}));
  // n = 7: 9, [2, 4], [5], [8]; then [6, 7] and [0, 1] do not fit: the best single entry left (6).
  EXPECT_EQ(top_runs(s, pos.data(), run_start, 7), (std::vector<int32_t>{2, 3, 4, 5, 6, 8, 9}));
  // A head that lost positions 3 and 4 earlier: its entries [0, 1, 2, 5] hold runs [0, 1], [2], [5].
  const std::vector<int32_t> holes = {0, 1, 2, 5};
  EXPECT_EQ(top_runs(std::vector<float>{0.0f, 0.7f, 0.6f, 0.1f}, holes.data(), run_start, 2),
            (std::vector<int32_t>{0, 1}));
  // Positions past run_start stand alone; every entry kept when n covers them.
  EXPECT_EQ(top_runs(s, pos.data(), {}, 2), (std::vector<int32_t>{3, 9}));
  EXPECT_EQ(top_runs(s, pos.data(), run_start, 10).size(), 10u);
}

// With runs, chunks end where no token run is cut; ChunkKV's ranking is otherwise the same.
TEST(Chunks, EndBetweenTokenRuns) {
  const std::vector<int32_t> run_start = {0, 1, 1, 1, 4, 5, 5, 7, 8, 9};
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  // Chunks of 2: [0, 2) would cut run [1, 3] -> [0, 4); [4, 6) cuts [5, 6] -> [4, 7); [7, 9); [9, 10).
  EXPECT_EQ(chunk_ends_on_runs(pos.data(), 10, run_start, 2), (std::vector<int64_t>{4, 7, 9, 10}));
  EXPECT_EQ(chunk_ends_on_runs(pos.data(), 10, {}, 4), (std::vector<int64_t>{4, 8, 10}));
  PressConfig c;
  c.chunk = 2;
  // Means over the chunk summed over the heads: [0, 4) 0.5, [4, 7) 1, [7, 9) 0.5, [9] 3.
  const HeadScores s = {{0, 2, 0, 0, 0, 3, 0, 1, 0, 3}};
  // n = 5: [9], [4, 7); neither [0, 4) nor [7, 9) fits. n = 6: [7, 9) does (ties: the earlier first).
  EXPECT_EQ(select_top(c, s, 5, {4, 7, 9, 10}), (Selection{{4, 5, 6, 9}}));
  EXPECT_EQ(select_top(c, s, 6, {4, 7, 9, 10}), (Selection{{4, 5, 6, 7, 8, 9}}));
}

// Sentences end after a sentence-ending token followed by a run break (a token beginning with
// whitespace, or its own text ending with it); with sentences, chunks hold the whole sentences
// that fit, and a longer one is cut as plain chunks with runs are.
TEST(Chunks, HoldWholeSentences) {
  // ids: 0 = " word" (space first), 1 = "." (ends, joins), 2 = ".\n" (ends, break after), 3 = "4" (joins)
  const std::vector<uint8_t> flags = {kBreakBefore, kSentenceEnd, kSentenceEnd | kBreakAfter, 0};
  const std::vector<int32_t> tokens = {0, 0, 1, 0, 3, 1, 3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  //                                   0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17
  // "3.4" at 4-6 does not end a sentence: no run break after its ".".
  const std::vector<int32_t> start = token_sentence_starts(tokens, flags);
  EXPECT_EQ(start, (std::vector<int32_t>{0, 0, 0, 3, 3, 3, 3, 3, 3, 9, 9, 9, 9, 9, 9, 9, 9, 17}));
  std::vector<int32_t> pos(tokens.size());
  for (size_t p = 0; p < pos.size(); ++p) pos[p] = static_cast<int32_t>(p);
  const std::vector<int32_t> run_start = token_run_starts(tokens, flags, 100);  // " 3.4" at 3-6 is one run
  // Chunks of 10: [0, 3) and [3, 9) fit together; [9, 17) goes to the next chunk, with [17].
  EXPECT_EQ(chunk_ends_on_sentences(pos.data(), 18, run_start, start, 10), (std::vector<int64_t>{9, 18}));
  // Chunks of 4: [0, 3); [3, 9) is longer: cut after 4 entries, moved past the run " 3.4" -> [3, 7),
  // [7, 9); [9, 17) cut into [9, 13), [13, 17); then [17].
  EXPECT_EQ(chunk_ends_on_sentences(pos.data(), 18, run_start, start, 4),
            (std::vector<int64_t>{3, 7, 9, 13, 17, 18}));
  // A head that lost positions 3-8: its entries 0, 1, 2, 9, ... hold the sentences [0, 3) and [9, 17).
  const std::vector<int32_t> holes = {0, 1, 2, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  EXPECT_EQ(chunk_ends_on_sentences(holes.data(), 12, run_start, start, 10), (std::vector<int64_t>{3, 12}));
}

// A layer with one query head on one KV head, head_dim 2, entries at positions 0..n-1.
struct TinyLayer {
  std::vector<float> k, v, q;
  std::vector<int32_t> pos, qpos;
  KvHeadView view;
  ThreadPool pool{1};

  TinyLayer(const std::vector<float>& keys, const std::vector<float>& window_queries) : k(keys), v(keys), q(window_queries) {
    const int64_t n = static_cast<int64_t>(k.size()) / 2, w = static_cast<int64_t>(q.size()) / 2;
    for (int32_t i = 0; i < n; ++i) pos.push_back(i);
    for (int64_t i = n - w; i < n; ++i) qpos.push_back(static_cast<int32_t>(i));
    view = {n, k.data(), v.data(), pos.data()};
  }
  LayerInput input() {
    LayerInput in;
    in.n_layer = 1;
    in.n_head = 1;
    in.head_dim = 2;
    in.kv = {&view, 1};
    in.q_window = q.data();
    in.window_pos = qpos.data();
    in.n_window = static_cast<int64_t>(qpos.size());
    in.pool = &pool;
    return in;
  }
};

TEST(WindowAttention, CausalInsideTheWindowOnly) {
  // Entries 0..3; window = the queries of entries 2 and 3. The query at 2 must not see entry 3.
  const float x = std::sqrt(2.0f);  // scores are q.k / sqrt(2)
  TinyLayer t({1, 0, 0, 0, 0, 0, 0, 1}, {x, 0, 0, x});
  const HeadScores s = window_attention(t.input(), 2);
  // query 2 (pos 2): scores [1, 0, 0] over entries 0..2 -> softmax e/(e+2), 1/(e+2), 1/(e+2)
  // query 3 (pos 3): scores [0, 0, 0, 1] over entries 0..3 -> 1/(3+e) ... e/(3+e)
  const double e = std::exp(1.0);
  const std::vector<double> want = {e / (e + 2) + 1 / (3 + e), 1 / (e + 2) + 1 / (3 + e),
                                    1 / (e + 2) + 1 / (3 + e), e / (3 + e)};
  ASSERT_EQ(s[0].size(), 4u);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(s[0][j], want[j], 1e-6) << j;
}

TEST(SnapKv, KeepsTheWindowAndTheMostAttendedPrefix) {
  // 8 entries; keys 2 and 5 align with the window query, the rest are orthogonal.
  std::vector<float> k(16, 0.0f);
  for (int j = 0; j < 8; ++j) k[2 * j + 1] = 1;  // (0, 1)
  k[2 * 2] = 4, k[2 * 2 + 1] = 0;
  k[2 * 5] = 3, k[2 * 5 + 1] = 0;
  TinyLayer t(k, {1, 0});  // window W = 1: the query of entry 7
  PressConfig c;
  c.press = "snapkv";
  c.window = 1;
  c.kernel = 1;
  c.capacity = 3;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{2, 5, 7}}));
  // Max pooling with kernel 3 spreads entry 2's score to 1 and 3, which then beat entry 5.
  c.kernel = 3;
  c.capacity = 4;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{1, 2, 3, 7}}));
}

TEST(SnapKv, SkipsShortLayersUnlessAlways) {
  TinyLayer t({1, 0, 0, 1, 1, 1, 0, 2}, {1, 0});
  PressConfig c;
  c.press = "snapkv";
  c.window = 1;
  c.capacity = 4;  // == the layer's length: kept whole (official)
  EXPECT_TRUE(make_press(c)->select(t.input()).empty());
  c.capacity = 3;
  EXPECT_EQ(make_press(c)->select(t.input())[0].size(), 3u);
  // Ratio mode: the capacity is the shortest prompt that is compressed, unless `always`.
  c.capacity = 4;
  c.ratio = 0.5;
  EXPECT_TRUE(make_press(c)->select(t.input()).empty());
  c.compress_short = true;
  // Keeps int(4 * 0.5) = 2: the window entry 3 and the best prefix entry (after max pooling all
  // prefix scores tie, and ties go to the earlier entry).
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{0, 3}}));
}

TEST(PyramidKv, LayerBudgetsByHand) {
  PressConfig c;
  c.press = "pyramidkv";
  c.window = 32;
  // Paper: C = 132, W = 32 -> B = 100, min = 5, max = 195, 5 layers -> steps of 47.5.
  EXPECT_EQ(pyramid_layer_budget(c, 132, 10000, 32, 0, 5), 195 + 32);
  EXPECT_EQ(pyramid_layer_budget(c, 132, 10000, 32, 1, 5), 148 + 32);  // 147.5 rounds to even
  EXPECT_EQ(pyramid_layer_budget(c, 132, 10000, 32, 2, 5), 100 + 32);
  EXPECT_EQ(pyramid_layer_budget(c, 132, 10000, 32, 4, 5), 5 + 32);
  // Short prompt: max clamps to n - W = 150, min = 2B - max = 50.
  EXPECT_EQ(pyramid_layer_budget(c, 132, 182, 32, 0, 5), 150 + 32);
  EXPECT_EQ(pyramid_layer_budget(c, 132, 182, 32, 4, 5), 50 + 32);
  // kvpress: B = C = 1024 and the window inside: min = 51.2, max = 1996.8, 30 layers.
  c.variant = PressVariant::kKvpress;
  EXPECT_EQ(pyramid_layer_budget(c, 1024, 8000, 32, 0, 30), 1997);
  EXPECT_EQ(pyramid_layer_budget(c, 1024, 8000, 32, 29, 30), 51);
  // ... and uniform when min < W (C = 256: min = 12.8).
  EXPECT_EQ(pyramid_layer_budget(c, 256, 8000, 32, 0, 30), 256);
}

TEST(AdaKv, HeadBudgetsByHand) {
  // Two heads, B = 2: the joint top 4 of {9, 8, 7, 1} and {6, 0, 0, 0} is 9, 8, 7 | 6, so
  // c = (3, 1); with alpha 0.2: round(3 * 0.8 + 0.4) = 3 and round(1 * 0.8 + 0.4) = 1.
  const HeadScores s = {{9, 8, 7, 1}, {6, 0, 0, 0}};
  EXPECT_EQ(ada_prefix_budgets(s, 2, 0.2), (std::vector<int64_t>{3, 1}));
  // alpha 1: uniform; alpha 0: pure joint counts.
  EXPECT_EQ(ada_prefix_budgets(s, 2, 1.0), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ada_prefix_budgets(s, 2, 0.0), (std::vector<int64_t>{3, 1}));
  // Rounding keeps the layer's total: (3, 3, 0) with B = 2, alpha = 0.5 blends to 2.5, 2.5, 1;
  // rounding each (to even) would give 2 + 2 + 1 = 5, largest remainders give 3 + 2 + 1 = 6.
  EXPECT_EQ(ada_prefix_budgets({{9, 8, 7}, {6, 5, 4}, {0, 0, 0}}, 2, 0.5), (std::vector<int64_t>{3, 2, 1}));
  // A head cannot keep more than it has.
  EXPECT_EQ(ada_prefix_budgets({{9, 8}, {1, 1, 1, 1}}, 3, 0.0), (std::vector<int64_t>{2, 4}));
}

// The budget stage over scores of any press: Ada-KV's shared layer budget, with and without
// protected entries, and with per-head chunks.
TEST(Budgets, AdaSharesTheLayerAmongTheHeadsOfAnyScorer) {
  std::vector<KvHeadView> views(2);
  for (KvHeadView& v : views) v.n = 6;
  LayerInput in;
  in.kv = views;
  PressConfig c;
  c.press = "knorm";
  c.capacity = 3;
  c.budget = BudgetKind::kAda;
  c.alpha = 0;
  // The 6 best of both heads: 9 8 7 6 1 and the first 0 (of head 0): head 0 gets 5, head 1 one.
  const HeadScores s = {{9, 8, 7, 1, 0, 0}, {6, 0, 0, 0, 0, 0}};
  EXPECT_EQ(select_budgeted(c, in, s), (Selection{{0, 1, 2, 3, 4}, {0}}));
  // Protected entries (kKeepAlways) stay outside the shared budget: B = 3 - 1 = 2 per head, the 4
  // best unprotected scores are 9 8 7 (head 0) and 6 (head 1).
  const HeadScores p = {{9, 8, 7, 1, 0, kKeepAlways}, {6, 0, 0, 0, 0, kKeepAlways}};
  EXPECT_EQ(select_budgeted(c, in, p), (Selection{{0, 1, 2, 5}, {0, 5}}));
  // Chunks of 2 per head: head 0's budget 5 holds its two best chunks; head 1's budget of 1 is
  // under a chunk, so it keeps its best single entry (the layer stays within its budget).
  c.chunk = 2;
  EXPECT_EQ(select_budgeted(c, in, s), (Selection{{0, 1, 2, 3}, {0}}));
}

// CriticalKV: half the capacity by the press's scores (the protected entry among them, as kvpress's
// window scores the maximum), the rest by score x ||W_o v||_1.
TEST(Budgets, CriticalKvWeighsTheRestByWhatTheValuesAddToTheOutput) {
  // Values whose L1 norms are 1, 1, 10, 1, 100, 1 through W_o = [[1, 0], [0, -1]] (n_embd 2).
  const std::vector<float> v = {1, 0, 0, 1, 4, 6, 0, -1, 50, 50, 1, 0};
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5};
  const KvHeadView view{6, v.data(), v.data(), pos.data()};
  const std::vector<float> wo = {1, 0, 0, -1};
  ThreadPool pool(1);
  LayerInput in;
  in.n_head = 1;
  in.head_dim = 2;
  in.kv = {&view, 1};
  in.out_proj = wo;
  in.pool = &pool;
  PressConfig c;
  c.press = "snapkv";
  c.capacity = 4;
  const HeadScores s = {{5, 4, 3, 2, 1, kKeepAlways}};
  EXPECT_EQ(select_budgeted(c, in, s), (Selection{{0, 1, 2, 5}}));
  // Stage 1 keeps int(4 x 0.5) = 2: entry 5 (protected) and 0; then 4 (1 x 100) and 2 (3 x 10)
  // beat 1 (4 x 1) and 3 (2 x 1).
  c.critical = 0.5;
  EXPECT_EQ(select_budgeted(c, in, s), (Selection{{0, 2, 4, 5}}));
  in.out_proj = {};
  EXPECT_THROW(select_budgeted(c, in, s), Error);
}

TEST(StreamingLlm, KeepsSinksAndRecentEntries) {
  TinyLayer t(std::vector<float>(20, 1.0f), {1, 0});
  PressConfig c;
  c.press = "streaming_llm";
  c.capacity = 5;
  c.sinks = 2;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{0, 1, 7, 8, 9}}));
}

TEST(Knorm, KeepsTheSmallestKeys) {
  TinyLayer t({3, 0, 0, 1, 0, 5, 0.5f, 0, 2, 2}, {1, 0});
  PressConfig c;
  c.press = "knorm";
  c.capacity = 2;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{1, 3}}));
}

// Unit keys (1, 0), (.97, -.24), (0, 1), (.995, .0995): their mean a = (.741, .214), and the
// cosines with a .961, .865, .278, .984; keydiff keeps the two least aligned.
TEST(KeyDiff, KeepsTheKeysLeastAlignedWithTheMeanDirection) {
  TinyLayer t({1, 0, 2, -0.5f, 0, 3, 10, 1}, {1, 0});
  PressConfig c;
  c.press = "keydiff";
  c.capacity = 2;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{1, 2}}));
  c.capacity = 3;
  EXPECT_EQ(make_press(c)->select(t.input()), (Selection{{0, 1, 2}}));
}

TEST(Random, ReproducibleFromTheSeed) {
  TinyLayer t(std::vector<float>(200, 1.0f), {1, 0});
  PressConfig c;
  c.press = "random";
  c.capacity = 10;
  const Selection a = make_press(c)->select(t.input());
  EXPECT_EQ(make_press(c)->select(t.input()), a);
  c.seed = 1;
  EXPECT_NE(make_press(c)->select(t.input()), a);
  EXPECT_EQ(a[0].size(), 10u);
}

TEST(H2o, DividesByTheQueriesThatSawEachEntry) {
  // Two entries, both queries new: entry 0 is seen by 2 queries, entry 1 by 1.
  TinyLayer t({0, 0, 0, 0, 0, 0}, {1, 0});
  std::vector<std::vector<float>> observed = {{1.5f, 0.9f, 0.6f}};  // sums: 1.5/3, 0.9/2, 0.6/1
  LayerInput in = t.input();
  in.observed = observed;
  in.first_new_pos = 0;
  PressConfig c;
  c.press = "h2o";
  c.capacity = 1;
  EXPECT_EQ(make_press(c)->select(in), (Selection{{2}}));
  c.capacity = 2;
  EXPECT_EQ(make_press(c)->select(in), (Selection{{0, 2}}));
}

TEST(PressConfig, RejectsInvalidCombinations) {
  PressConfig c;
  c.press = "snapkv";
  c.capacity = 32;
  EXPECT_NE(c.validate().find("larger than the observation window"), std::string::npos);
  c.capacity = 64;
  EXPECT_EQ(c.validate(), "");
  c.ratio = 1.0;
  EXPECT_NE(c.validate().find("(0, 1)"), std::string::npos);
  c.ratio = -0.1;
  EXPECT_NE(c.validate().find("(0, 1)"), std::string::npos);
  c.ratio = 0;
  c.kernel = 4;
  EXPECT_NE(c.validate().find("odd"), std::string::npos);
  c.kernel = 7;
  c.chunk = 65;
  EXPECT_NE(c.validate().find("must fit in the KV capacity"), std::string::npos);
  c.chunk = 16;
  EXPECT_EQ(c.validate(), "");
  c.press = "ada_kv";  // each head takes its own chunks
  EXPECT_EQ(c.validate(), "");
  c.budget = BudgetKind::kPyramid;
  EXPECT_NE(c.validate().find("ada_kv is snapkv+budget=ada: budget pyramid does not go with it"), std::string::npos);
  c.budget = BudgetKind::kAda;
  EXPECT_EQ(c.validate(), "");
  // An alias names a press with options of its own; -v shows them (describe), and a value of one
  // of them other than the default is refused rather than silently overridden.
  PressConfig r;
  r.press = "recommended";
  EXPECT_EQ(r.validate(), "");
  EXPECT_EQ(r.describe(), "recommended = snapkv (capacity 1024, window 32, kernel 7, pool max, gqa mean, budget ada, "
                          "chunks of 24, runs of up to 32, whole sentences)");
  EXPECT_EQ(make_press(r)->config().chunk, 24);
  EXPECT_TRUE(make_press(r)->config().sentences);
  EXPECT_EQ(make_press(r)->config().runs, 32);
  EXPECT_EQ(make_press(r)->config().budget, BudgetKind::kAda);
  r.runs = 16;
  EXPECT_NE(r.validate().find("recommended is snapkv+budget=ada+chunk=24+runs=32+sentences=on: runs 16 does not go with it"),
            std::string::npos);
  r.runs = 0;
  r.kernel = 15;  // an option the alias leaves at its default may change
  EXPECT_EQ(r.validate(), "");
  c.chunk = 0;
  c.press = "snap";
  EXPECT_NE(c.validate().find("unknown press 'snap'"), std::string::npos);
  EXPECT_ANY_THROW(make_press(c));
}

}  // namespace
}  // namespace snapkv

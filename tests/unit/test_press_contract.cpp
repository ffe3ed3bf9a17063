// The contract every registered press keeps, checked on the same synthetic layers for each name
// in the registry (a new press is run here without anyone listing it) and with each budget
// (uniform, pyramid, ada), keeping single entries, whole token runs, whole chunks or chunks of whole
// sentences: positions within the layer, strictly ascending (so unique and sorted), the same
// selection from two instances, the budget's rule, the tail of the prompt it promises to keep, and
// prompts no longer than the capacity kept whole. What each press promises is stated in
// kContracts, with the reason where a press keeps no window; a registered press missing from that
// table fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "kv/press.h"

namespace snapkv {
namespace {

constexpr int kLayers = 3, kHeads = 4, kKvHeads = 2, kHeadDim = 8;
constexpr int kCapacity = 24, kWindow = 8;

enum class Budget {
  kWhole,       // keeps every entry (an empty Selection)
  kPerHead,     // every head keeps exactly the capacity (budget uniform)
  kPerLayer,    // every head of a layer keeps the layer's budget (>= its protected tail); the
                // budgets average the capacity over the layers (budget pyramid)
  kLayerTotal,  // a layer's heads share n_kv_heads * capacity, each keeping at least its protected
                // tail (budget ada)
  kLayerAtMost, // the same, in whole chunks: at most n_kv_heads * capacity (uniform or ada with chunks)
};

struct Contract {
  const char* press;
  Budget budget;  // with the default budget, uniform
  // How many of the prompt's last entries every head keeps with budget uniform, given the config;
  // with the other budgets, only the scoring window's (press->window()).
  int (*kept_tail)(const PressConfig&);
  int kept_head;    // how many of its first entries (protected: kept under every budget)
  const char* why;  // where the promise comes from, or why there is none
};

int window_of(const PressConfig& c) { return c.window; }
int none(const PressConfig&) { return 0; }

const Contract kContracts[] = {
    {"full", Budget::kWhole, none, 0, "keeps everything"},
    {"snapkv", Budget::kPerHead, window_of, 0, "the window's entries score kKeepAlways"},
    {"pyramidkv", Budget::kPerLayer, window_of, 0, "SnapKV's scores: the window is kept"},
    {"ada_kv", Budget::kLayerTotal, window_of, 0, "SnapKV's scores: the window is kept"},
    {"recommended", Budget::kLayerAtMost, window_of, 0, "SnapKV's scores: the window's chunks are kept"},
    {"streaming_llm", Budget::kPerHead, [](const PressConfig& c) { return c.capacity - c.sinks; }, 4,
     "the sinks and the most recent capacity - sinks entries (the window among them)"},
    {"h2o", Budget::kPerHead, none, 0, "no entry is protected, as kvpress's ObservedAttentionPress"},
    {"tova", Budget::kPerHead, [](const PressConfig&) { return 1; }, 0,
     "only the last token's own entry is protected; it alone scores the rest"},
    {"tova_decode", Budget::kPerHead, [](const PressConfig&) { return 1; }, 0,
     "tova on the prompt (its evictions while generating: PressDecoding.*)"},
    {"knorm", Budget::kPerHead, none, 0, "scores keys alone: no query window"},
    {"keydiff", Budget::kPerHead, none, 0, "scores keys alone: no query window"},
    {"random", Budget::kPerHead, none, 0, "random by design: no window"},
    {"expected_attention", Budget::kPerHead, none, 4,
     "the sinks score kKeepAlways; it scores with query statistics, not a window"},
    {"kvzip", Budget::kPerHead, none, 4,
     "the sinks score kKeepAlways; it scores with the reconstruction's attention maxima, not a window"},
};

const Contract* contract_of(const std::string& press) {
  for (const Contract& c : kContracts) {
    if (press == c.press) return &c;
  }
  return nullptr;
}

// kLayers layers of kKvHeads stored heads of n entries (positions 0..n-1) with random f32 keys and
// values, the last kWindow queries of kHeads query heads, observed attention for h2o, and the
// statistics of kStatQueries random pre-RoPE queries per head for expected_attention.
struct Layers {
  int64_t n;
  std::vector<std::vector<float>> k, v;  // [layer * kKvHeads + head][n * kHeadDim]
  std::vector<std::vector<float>> q;     // [layer][kWindow * kHeads * kHeadDim]
  std::vector<std::vector<std::vector<float>>> observed;  // [layer][query head][n]
  std::vector<std::vector<double>> q_sum, q_outer;         // [layer][head * d], [layer][head * d * d]
  static constexpr int kStatQueries = 16;
  RopeParams rope = [] {
    RopeParams r;
    r.n_rot = kHeadDim;
    return r;
  }();
  std::vector<int32_t> pos, qpos;
  std::vector<int32_t> run_start;       // token runs of 1 to 4 positions
  std::vector<int32_t> sentence_start;  // sentences of 1 to 9 positions
  std::vector<std::vector<KvHeadView>> views;  // [layer][head]
  ThreadPool pool{1};

  explicit Layers(int64_t n_entries) : n(n_entries) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const auto random = [&](size_t size) {
      std::vector<float> x(size);
      for (float& e : x) e = u(rng);
      return x;
    };
    for (int32_t i = 0; i < n; ++i) pos.push_back(i);
    for (int32_t i = 0; i < n; ++i) run_start.push_back(i > 0 && (i * 7) % 5 != 0 && i - run_start.back() < 4 ? run_start.back() : i);
    for (int32_t i = 0; i < n; ++i) {
      sentence_start.push_back(i > 0 && (i * 5) % 9 != 0 && i - sentence_start.back() < 9 ? sentence_start.back() : i);
    }
    for (int64_t i = n - kWindow; i < n; ++i) qpos.push_back(static_cast<int32_t>(i));
    for (int il = 0; il < kLayers; ++il) {
      for (int h = 0; h < kKvHeads; ++h) {
        k.push_back(random(static_cast<size_t>(n) * kHeadDim));
        v.push_back(random(static_cast<size_t>(n) * kHeadDim));
      }
      q.push_back(random(static_cast<size_t>(kWindow) * kHeads * kHeadDim));
      std::vector<std::vector<float>> obs(kHeads);
      for (std::vector<float>& o : obs) {
        o = random(static_cast<size_t>(n));
        for (float& x : o) x = x + 1.0f;  // column sums of probabilities are not negative
      }
      observed.push_back(std::move(obs));
      std::vector<double> sum(static_cast<size_t>(kHeads) * kHeadDim), outer(sum.size() * kHeadDim);
      for (int h = 0; h < kHeads; ++h) {
        for (int t = 0; t < kStatQueries; ++t) {
          const std::vector<float> x = random(kHeadDim);
          for (int i = 0; i < kHeadDim; ++i) {
            sum[h * kHeadDim + i] += x[i];
            for (int j = 0; j < kHeadDim; ++j) outer[(h * kHeadDim + i) * kHeadDim + j] += double{x[i]} * x[j];
          }
        }
      }
      q_sum.push_back(std::move(sum));
      q_outer.push_back(std::move(outer));
    }
    views.resize(kLayers);
    for (int il = 0; il < kLayers; ++il) {
      for (int h = 0; h < kKvHeads; ++h) {
        const size_t i = static_cast<size_t>(il * kKvHeads + h);
        views[il].push_back({n, k[i].data(), v[i].data(), pos.data(), KvType::kF32});
      }
    }
  }

  LayerInput input(int il) {
    LayerInput in;
    in.layer = il;
    in.n_layer = kLayers;
    in.n_head = kHeads;
    in.head_dim = kHeadDim;
    in.kv = views[il];
    in.q_window = q[il].data();
    in.window_pos = qpos.data();
    in.n_window = kWindow;
    in.observed = observed[il];
    in.q_sum = q_sum[il];
    in.q_outer = q_outer[il];
    in.q_count = kStatQueries;
    in.q_next_pos = static_cast<int32_t>(n);
    in.rope = &rope;
    in.first_new_pos = 0;
    in.run_start = run_start;
    in.sentence_start = sentence_start;
    in.pool = &pool;
    return in;
  }
};

struct Spans {
  int runs = 0, chunk = 0;
  bool sentences = false;
};

PressConfig config_of(const std::string& press, BudgetKind budget = BudgetKind::kUniform, Spans spans = {}) {
  PressConfig c;
  c.runs = spans.runs;
  c.chunk = spans.chunk;
  c.sentences = spans.sentences;
  c.press = press;
  c.capacity = kCapacity;
  c.window = kWindow;
  c.budget = budget;
  return c;
}

TEST(PressContract, EveryRegisteredPressKeepsItsPromisesUnderEveryBudget) {
  Layers layers(96);  // longer than the capacity: every press compresses
  ASSERT_FALSE(press_infos().empty());
  for (const PressInfo& info : press_infos()) {
   for (const BudgetKind budget : {BudgetKind::kUniform, BudgetKind::kPyramid, BudgetKind::kAda}) {
   for (const Spans spans : {Spans{}, Spans{4, 0}, Spans{0, 5}, Spans{4, 5}, Spans{0, 12, true}, Spans{4, 12, true}}) {
    const auto [runs, chunk, sentences] = spans;
    SCOPED_TRACE(info.name + ", budget " + budget_name(budget) + ", runs " + std::to_string(runs) + ", chunk " +
                 std::to_string(chunk) + (sentences ? ", sentences" : ""));
    const PressConfig cfg = config_of(info.name, budget, spans);
    if (!cfg.validate().empty()) continue;  // pyramidkv and ada_kv have their own budget
    const auto press = make_press(cfg), again = make_press(cfg);
    if (budget != BudgetKind::kUniform && press->config().press != info.name) continue;  // an alias: its own budget
    // Pyramid with chunks promises no layer total, and a late layer's budget may hold fewer
    // entries than the window's chunks.
    if (chunk > 0 && press->config().budget == BudgetKind::kPyramid) continue;
    const Contract* contract = contract_of(info.name);
    EXPECT_TRUE(contract) << "press '" << info.name << "' has no row in kContracts: state its budget rule and "
                          << "which entries it always keeps";
    if (contract && contract->budget == Budget::kWhole && budget != BudgetKind::kUniform) continue;
    const Budget rule = chunk > 0 && (!contract || contract->budget != Budget::kWhole) ? Budget::kLayerAtMost
                        : !contract || budget == BudgetKind::kUniform ? (contract ? contract->budget : Budget::kPerHead)
                        : budget == BudgetKind::kPyramid              ? Budget::kPerLayer
                                                                      : Budget::kLayerTotal;
    int64_t layers_total = 0;
    for (int il = 0; il < kLayers; ++il) {
      SCOPED_TRACE("layer " + std::to_string(il));
      const Selection sel = press->select(layers.input(il));
      EXPECT_EQ(again->select(layers.input(il)), sel) << "two instances disagree";
      EXPECT_EQ(press->select(layers.input(il)), sel) << "two runs disagree";
      if (rule == Budget::kWhole) {
        EXPECT_TRUE(sel.empty());
        continue;
      }
      ASSERT_EQ(sel.size(), static_cast<size_t>(kKvHeads));
      int64_t layer_total = 0;
      for (int h = 0; h < kKvHeads; ++h) {
        SCOPED_TRACE("head " + std::to_string(h));
        const std::vector<int32_t>& kept = sel[h];
        ASSERT_FALSE(kept.empty());
        EXPECT_GE(kept.front(), 0);
        EXPECT_LT(kept.back(), layers.n);
        for (size_t i = 1; i < kept.size(); ++i) EXPECT_LT(kept[i - 1], kept[i]) << "not ascending at " << i;
        layer_total += static_cast<int64_t>(kept.size());
        if (!contract) continue;
        // The tail it promises, and at least the queries it scores with (whole runs or chunks may
        // take the room of an unprotected tail).
        const int tail = budget == BudgetKind::kUniform && runs == 0 && chunk == 0
                             ? std::max(contract->kept_tail(cfg), press->window())
                             : press->window();
        for (int64_t p = layers.n - tail; p < layers.n; ++p) {
          EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), p)) << "tail position " << p << " dropped ("
                                                                       << contract->why << ")";
        }
        for (int32_t p = 0; p < contract->kept_head; ++p) {
          EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), p)) << "head position " << p << " dropped";
        }
        if (rule == Budget::kPerHead) {
          EXPECT_EQ(kept.size(), static_cast<size_t>(kCapacity));
        }
        if (rule == Budget::kPerLayer) {
          EXPECT_EQ(kept.size(), sel[0].size()) << "heads of a layer differ";
        }
        if (rule == Budget::kPerLayer || rule == Budget::kLayerTotal || rule == Budget::kLayerAtMost) {
          EXPECT_GE(kept.size(), static_cast<size_t>(std::max(tail, contract->kept_head)));
        }
      }
      if (rule == Budget::kLayerTotal) {
        EXPECT_EQ(layer_total, kKvHeads * kCapacity);
      }
      if (rule == Budget::kLayerAtMost) {
        EXPECT_LE(layer_total, kKvHeads * kCapacity);
      }
      layers_total += layer_total;
    }
    // Pyramid budgets are rounded one by one: each layer may be off by one.
    if (rule == Budget::kPerLayer) {
      EXPECT_NEAR(static_cast<double>(layers_total), kLayers * kKvHeads * kCapacity, kLayers * kKvHeads);
    }
   }
   }
  }
}

TEST(PressContract, PromptsNoLongerThanTheCapacityStayWhole) {
  Layers layers(kCapacity);
  for (const PressInfo& info : press_infos()) {
    SCOPED_TRACE(info.name);
    const auto press = make_press(config_of(info.name));
    for (int il = 0; il < kLayers; ++il) EXPECT_TRUE(press->select(layers.input(il)).empty()) << "layer " << il;
  }
}

}  // namespace
}  // namespace snapkv

// TOVA as published (tova_decode: tova, then one eviction per layer and decoded token) against
// kvpress's PrefillDecodingPress(TOVAPress, DecodingPress(TOVAPress, compression_interval=1)), on
// the default model (tests/fixtures/press_tova_decode.json, tools/reference/make_tova_decode_fixture.py).
// Both runs are fed the same tokens (kvpress's greedy ones), so only the selections can differ.
// Per step and layer the entry we evict must be kvpress's, unless the two lowest scores lie within
// kNearTie of the largest there (fp32 summation order); a layer that took the other entry at such
// a tie is followed no further. A layer never at a tie must end holding exactly kvpress's positions.
// The evaluations' answering sequences (RecordedPrefill::sequence) evict as a session does.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

#include "engine/sequence.h"
#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "press_fixture.h"
#include "reference_model.h"
#include "same_cache.h"

namespace snapkv {
namespace {

using nlohmann::json;

// TOVA's scores are probabilities, most of them tiny against the largest: gaps of 1e-8 of it are
// common and still decided alike (measured here: every one of the 2,880 evictions, the smallest
// gap 3e-11); below 1e-9 (29 of them) another summation order may decide otherwise.
constexpr double kNearTie = 1e-9;

// Layer il's positions, which every KV head must hold alike (TOVA averages over all heads).
std::vector<int32_t> held(const Sequence& s, int il) {
  const auto heads = s.kv().layer(il);
  std::vector<int32_t> p(heads[0].pos, heads[0].pos + heads[0].n);
  for (const KvHeadView& h : heads) EXPECT_EQ(std::vector<int32_t>(h.pos, h.pos + h.n), p) << "layer " << il;
  return p;
}

TEST(PressDecoding, TovaEvictingWhileDecodingMatchesKvpress) {
  const json fx = test::load_fixture("press_tova_decode.json");
  const Decoder& model = *test::reference_model().model;
  const int n_layer = model.hparams().n_layer;
  ThreadPool pool(2);
  ASSERT_EQ(fx.at("cases").size(), 3u);
  for (const json& c : fx.at("cases")) {
    const auto ids = fx.at("prompts").at(c.at("prompt").get<size_t>()).at("tokens").get<std::vector<int32_t>>();
    const int C = c.at("capacity").get<int>();
    const auto L = static_cast<int32_t>(ids.size());
    SequenceOptions o;
    o.kv_type = KvType::kF32;
    ASSERT_EQ(apply_press_spec(o.press, "tova_decode"), "");
    o.press.capacity = C;
    Sequence s(model, L + 64, pool, o);
    s.prefill(ids);
    std::vector<bool> diverged(n_layer, false);
    for (int il = 0; il < n_layer; ++il) {
      const auto want = c.at("prefill_kept")[il].get<std::vector<int32_t>>();
      if (c.at("prefill_gap")[il].get<double>() < kNearTie) {
        diverged[il] = held(s, il) != want;
      } else {
        ASSERT_EQ(held(s, il), want) << "prefill, layer " << il << ", C " << C;
      }
    }
    int n_steps = 0, n_ties = 0;
    double closest = 1;
    for (const json& step : c.at("steps")) {
      const int32_t pos = L + n_steps++;
      std::vector<std::vector<int32_t>> before(n_layer);
      for (int il = 0; il < n_layer; ++il) before[il] = held(s, il);
      s.decode(step.at("token").get<int32_t>());
      for (int il = 0; il < n_layer; ++il) {
        const std::vector<int32_t> after = held(s, il);
        ASSERT_EQ(static_cast<int>(after.size()), C) << "layer " << il << " at position " << pos;
        std::vector<int32_t> gone;
        before[il].push_back(pos);
        std::set_difference(before[il].begin(), before[il].end(), after.begin(), after.end(), std::back_inserter(gone));
        ASSERT_EQ(gone.size(), 1u) << "layer " << il << " at position " << pos;
        if (diverged[il]) continue;
        const double gap = step.at("gap")[il].get<double>();
        if (gap < kNearTie) ++n_ties;
        if (gone[0] == step.at("evicted")[il].get<int32_t>()) {
          closest = std::min(closest, gap);
          continue;
        }
        ASSERT_LT(gap, kNearTie) << "layer " << il << " at position " << pos << " evicts " << gone[0]
                                 << ", kvpress " << step.at("evicted")[il] << ", C " << C;
        diverged[il] = true;
      }
    }
    int n_diverged = 0;
    for (int il = 0; il < n_layer; ++il) {
      if (diverged[il]) {
        ++n_diverged;
        continue;
      }
      EXPECT_EQ(held(s, il), c.at("final_kept")[il].get<std::vector<int32_t>>()) << "layer " << il << ", C " << C;
    }
    std::printf("tova_decode C=%d on prompt %zu: %d steps x %d layers, %d evictions at near ties, %d layers took "
                "the other entry at one, smallest gap matched %.2e\n",
                C, c.at("prompt").get<size_t>(), n_steps, n_layer, n_ties, n_diverged, closest);
  }
}

// snapkv eval answers on a sequence a recorded prefill hands out. With a press evicting while
// decoding it must go on as a session that prefilled the prompt with that press: the same greedy
// tokens and, after them, the same entries. The recording keeps a wider window (32, as for the
// other presses of an evaluation) than tova_decode's one query.
TEST(PressDecoding, ARecordedPrefillsSequenceEvictsAsASession) {
  const Decoder& model = *test::reference_model().model;
  const PressInputs& inputs = test::press_inputs_of_default_model();
  ThreadPool pool(2);
  std::vector<int32_t> ids = test::load_fixture("logits_transformers.json")["input_ids"].get<std::vector<int32_t>>();
  ids.resize(600);
  constexpr int kTokens = 24;
  const int n_ctx = static_cast<int>(ids.size()) + kTokens;
  for (const char* spec : {"tova_decode", "snapkv+recompress=8"}) {
    SCOPED_TRACE(spec);
    PressConfig pc;
    ASSERT_EQ(apply_press_spec(pc, spec), "");
    pc.capacity = 128;
    const std::unique_ptr<Press> press = make_press(pc);
    const RecordedPrefill rec(model, ids, KvType::kF16, 32, press->needs(), pool);
    const std::unique_ptr<Sequence> eval = rec.sequence(press.get(), inputs, n_ctx);
    Sequence session(model, n_ctx, pool, SequenceOptions{KvType::kF16, pc, &inputs});
    session.prefill(ids);
    for (int t = 0; t < kTokens; ++t) {
      const auto greedy = [](const Sequence& s) {
        return static_cast<int32_t>(std::max_element(s.logits().begin(), s.logits().end()) - s.logits().begin());
      };
      ASSERT_EQ(greedy(*eval), greedy(session)) << "token " << t;
      eval->decode(greedy(session));
      session.decode(greedy(session));
    }
    test::expect_same_cache(eval->kv(), session.kv(), spec);
    for (int il = 0; il < model.hparams().n_layer; ++il) {
      for (const KvHeadView& h : eval->kv().layer(il)) {
        EXPECT_LE(h.n, pc.capacity + std::max(pc.recompress, 1)) << "layer " << il << ": evicted while decoding";
      }
    }
  }
}

}  // namespace
}  // namespace snapkv

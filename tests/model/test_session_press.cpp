// Compression inside a session on the default model: the cache a press leaves during prefill
// (layer by layer, inside the forward pass) is the one it leaves when applied to a recorded full
// prefill afterwards; decoding continues at true positions; chat turns, question-agnostic
// prefills and re-compression keep the cache within its budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <tuple>

#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "kv/press_inputs.h"
#include "kv/token_runs.h"
#include "reference_model.h"

namespace snapkv {
namespace {

std::vector<int32_t> essay(size_t n) {
  std::vector<int32_t> ids = test::load_fixture("logits_transformers.json")["input_ids"].get<std::vector<int32_t>>();
  ids.resize(std::min(n, ids.size()));
  return ids;
}

SequenceOptions snapkv_options(int capacity, KvType type = KvType::kF16) {
  SequenceOptions o;
  o.kv_type = type;
  o.press.press = "snapkv";
  o.press.capacity = capacity;
  return o;
}

std::vector<int32_t> positions(const KvHeadView& h) { return {h.pos, h.pos + h.n}; }

int argmax(std::span<const float> x) { return static_cast<int>(std::max_element(x.begin(), x.end()) - x.begin()); }

TEST(SessionPress, InPrefillCompressionEqualsPressingARecordedPrefill) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(700);
  // One recorded prefill for every press, as the evaluation runner does: the SnapKV scores it
  // keeps serve pyramidkv and ada_kv, and are not taken for another pooling kernel or capacity.
  const RecordedPrefill rec(model, ids, KvType::kF16, 32, PressNeeds{.observed = true, .stats_from = 4}, pool);
  for (const auto& [name, kernel, capacity] : {std::tuple{"snapkv", 7, 200}, std::tuple{"ada_kv", 7, 200},
                                              std::tuple{"pyramidkv", 7, 300}, std::tuple{"snapkv", 5, 200},
                                              std::tuple{"h2o", 7, 200}, std::tuple{"expected_attention", 7, 200}}) {
    SequenceOptions o = snapkv_options(capacity);
    o.press.press = name;
    o.press.kernel = kernel;
    Sequence s(model, 800, pool, o);
    s.prefill(ids);
    KvCache offline = rec.pressed(*make_press(o.press));
    const KvCache& online = s.kv();
    for (int il = 0; il < model.hparams().n_layer; ++il) {
      const auto a = online.layer(il), b = offline.layer(il);
      for (size_t h = 0; h < a.size(); ++h) ASSERT_EQ(positions(a[h]), positions(b[h])) << name << " layer " << il;
    }
    // Same prompt logits as without compression: prefill outputs use the full cache.
    EXPECT_EQ(argmax(s.logits()), argmax(rec.last_logits())) << name;
  }
}

// kvzip in a session (the prompt prefilled whole, then the reconstruction passes, then the press)
// keeps what it keeps on a recorded prefill; the reconstruction leaves no entry behind, the
// prompt's logits are those of the prompt, and the server's stepped prefill does the same.
TEST(SessionPress, KvzipInASessionEqualsPressingARecordedPrefill) {
  const Decoder& model = *test::reference_model().model;
  const auto tok = Tokenizer::from_gguf(*test::reference_model().file);
  const PressInputs inputs = press_inputs(*tok);
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(700);
  const RecordedPrefill rec(model, ids, KvType::kF16, 1, PressNeeds{.reconstruct = true}, pool);
  SequenceOptions o = snapkv_options(200);
  o.press.press = "kvzip";
  EXPECT_ANY_THROW(Sequence(model, 800, pool, o)) << "no press inputs given";
  EXPECT_ANY_THROW(rec.pressed(*make_press(o.press)));
  o.inputs = &inputs;
  const KvCache offline = rec.pressed(*make_press(o.press), nullptr, &inputs);
  EXPECT_EQ(rec.full().entries(), model.hparams().n_layer * model.hparams().n_head_kv * 700) << "the record is left whole";
  for (const bool stepped : {false, true}) {
    Sequence s(model, 800, pool, o);
    if (stepped) {
      s.begin_prefill(ids);
      while (!s.prefill_step()) {
      }
    } else {
      s.prefill(ids);
    }
    EXPECT_EQ(s.n_past(), 700);
    for (int il = 0; il < model.hparams().n_layer; ++il) {
      const auto a = s.kv().layer(il), b = offline.layer(il);
      for (size_t h = 0; h < a.size(); ++h) {
        ASSERT_EQ(positions(a[h]), positions(b[h])) << "layer " << il;
        ASSERT_EQ(a[h].n, 200) << "layer " << il;
      }
    }
    EXPECT_EQ(argmax(s.logits()), argmax(rec.last_logits()));
    s.decode(argmax(s.logits()));
    EXPECT_EQ(s.kv().layer(0)[0].pos[200], 700) << "decoding goes on at the prompt's next position";
  }
}

// The default tokenizer writes a number one digit per token and an identifier in many pieces; a
// token run is what whitespace leaves together.
TEST(TokenRuns, OnTheDefaultTokenizerANumberAndAnIdentifierAreOneRunEach) {
  const auto tok = Tokenizer::from_gguf(*test::reference_model().file);
  const std::vector<uint8_t> flags = token_run_flags(*tok);
  const std::vector<int32_t> ids = tok->encode("The magic number is 4144382.\nIts id: 3c4a9b2e-5d6f-4a1b-8c9d-0e1f2a3b4c5d ok", false);
  const std::vector<int32_t> start = token_run_starts(ids, flags, 64);
  std::vector<std::string> runs;
  for (size_t p = 0; p < ids.size(); ++p) {
    if (start[p] == static_cast<int32_t>(p)) runs.emplace_back();
    runs.back() += tok->token_piece(ids[p]);
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"The", " magic", " number", " is", " 4144382.", "\n", "Its", " id:",
                                            " 3c4a9b2e-5d6f-4a1b-8c9d-0e1f2a3b4c5d", " ok"}));
  EXPECT_GE(std::count(start.begin(), start.end(), start[ids.size() - 2]), 20) << "the identifier's pieces";
  // Capped: no run is longer than max_len.
  const std::vector<int32_t> capped = token_run_starts(ids, flags, 8);
  for (size_t p = 0; p < ids.size(); ++p) EXPECT_LT(static_cast<int32_t>(p) - capped[p], 8);
}

// Sentences on the default tokenizer: they end at . ! ? before whitespace (closing quotes
// included) and at line breaks; a decimal point or an identifier's dot does not end one.
TEST(TokenRuns, OnTheDefaultTokenizerSentencesEndAtStopsAndLineBreaks) {
  const auto tok = Tokenizer::from_gguf(*test::reference_model().file);
  const std::vector<int32_t> ids = tok->encode(
      "Sit in Dolores Park on a sunny day. It costs 3.14 dollars! She asked \"why?\" and left.\nNext: "
      "see config.json (ok)",
      false);
  const std::vector<int32_t> start = token_sentence_starts(ids, token_run_flags(*tok));
  std::vector<std::string> sentences;
  for (size_t p = 0; p < ids.size(); ++p) {
    if (start[p] == static_cast<int32_t>(p)) sentences.emplace_back();
    sentences.back() += tok->token_piece(ids[p]);
  }
  EXPECT_EQ(sentences, (std::vector<std::string>{"Sit in Dolores Park on a sunny day.", " It costs 3.14 dollars!",
                                                 " She asked \"why?\"", " and left.", "\n",
                                                 "Next: see config.json (ok)"}));
}

// A press keeping whole token runs inside a session presses as it does a recorded prefill; with
// chunks, every run is kept or dropped whole.
TEST(SessionPress, TokenRunsInPrefillEqualPressingARecordedPrefill) {
  const Decoder& model = *test::reference_model().model;
  const auto tok = Tokenizer::from_gguf(*test::reference_model().file);
  const PressInputs inputs = press_inputs(*tok);
  const std::vector<uint8_t>& flags = inputs.run_flags;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(700);
  const std::vector<int32_t> start = token_run_starts(ids, flags, 16);
  const RecordedPrefill rec(model, ids, KvType::kF16, 32, PressNeeds{}, pool);
  const std::vector<int32_t> sentence = token_sentence_starts(ids, flags);
  for (const char* spec : {"snapkv+runs=16", "snapkv+budget=ada+runs=16", "snapkv+chunk=20+runs=16",
                           "snapkv+chunk=20+runs=16+sentences=on"}) {
    SCOPED_TRACE(spec);
    SequenceOptions o = snapkv_options(200);
    ASSERT_EQ(apply_press_spec(o.press, spec), "");
    EXPECT_ANY_THROW(Sequence(model, 800, pool, o)) << "no press inputs given";
    o.inputs = &inputs;
    Sequence s(model, 800, pool, o);
    s.prefill(ids);
    EXPECT_ANY_THROW(rec.pressed(*make_press(o.press)));
    const KvCache offline = rec.pressed(*make_press(o.press), nullptr, &inputs);
    for (int il = 0; il < model.hparams().n_layer; ++il) {
      const auto a = s.kv().layer(il), b = offline.layer(il);
      for (size_t h = 0; h < a.size(); ++h) {
        const std::vector<int32_t> kept = positions(a[h]);
        ASSERT_EQ(kept, positions(b[h])) << "layer " << il;
        if (o.press.chunk == 0) continue;
        for (size_t p = 1; p < ids.size(); ++p) {
          if (start[p] != start[p - 1]) continue;
          ASSERT_EQ(std::binary_search(kept.begin(), kept.end(), static_cast<int32_t>(p)),
                    std::binary_search(kept.begin(), kept.end(), static_cast<int32_t>(p - 1)))
              << "run at " << start[p] << " cut, layer " << il;
        }
        if (!o.press.sentences) continue;
        for (size_t p = 1; p < ids.size(); ++p) {  // every sentence that fits in a chunk is whole
          const auto end = std::find_if(sentence.begin() + p, sentence.end(), [&](int32_t x) { return x != sentence[p]; });
          if (sentence[p] != sentence[p - 1] || end - (sentence.begin() + sentence[p]) > 20) continue;
          ASSERT_EQ(std::binary_search(kept.begin(), kept.end(), static_cast<int32_t>(p)),
                    std::binary_search(kept.begin(), kept.end(), static_cast<int32_t>(p - 1)))
              << "sentence at " << sentence[p] << " cut, layer " << il;
        }
      }
    }
  }
}

TEST(SessionPress, ExtendingARecordedPrefillEqualsOnePrefill) {
  // What the evaluation runner does for cases sharing a prefix: prefill it, copy, extend the copy
  // (the window slides across the two calls: the second one is shorter than the window). The
  // split (690) is aligned to no SIMD width, so on every target the two runs tile the queries
  // differently and round differently (about 2.5e-3 on logits up to 29, AVX2 and AVX-512); a
  // wrong position or mask would move logits by far more.
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(700);
  const std::span<const int32_t> all(ids);
  const RecordedPrefill whole(model, ids, KvType::kF16, 32, PressNeeds{.observed = true, .stats_from = 4}, pool);
  RecordedPrefill prefix(model, KvType::kF16, 32, PressNeeds{.observed = true, .stats_from = 4}, pool);
  prefix.extend(all.first(690));
  RecordedPrefill parts = prefix;
  parts.extend(all.subspan(690));
  EXPECT_EQ(parts.tokens(), ids);
  EXPECT_EQ(prefix.tokens().size(), 690u);
  ASSERT_EQ(parts.last_logits().size(), whole.last_logits().size());
  for (size_t i = 0; i < whole.last_logits().size(); ++i) {
    ASSERT_NEAR(parts.last_logits()[i], whole.last_logits()[i], 1e-2f) << i;
  }
  for (const char* name : {"snapkv", "h2o", "pyramidkv", "expected_attention"}) {
    SequenceOptions o = snapkv_options(200);
    o.press.press = name;
    const KvCache a = whole.pressed(*make_press(o.press)), b = parts.pressed(*make_press(o.press));
    int64_t same = 0, total = 0;
    for (int il = 0; il < model.hparams().n_layer; ++il) {
      const auto x = a.layer(il), y = b.layer(il);
      for (size_t h = 0; h < x.size(); ++h) {
        const std::vector<int32_t> px = positions(x[h]), py = positions(y[h]);
        ASSERT_EQ(px.size(), py.size());
        std::vector<int32_t> common;
        std::set_intersection(px.begin(), px.end(), py.begin(), py.end(), std::back_inserter(common));
        same += static_cast<int64_t>(common.size());
        total += static_cast<int64_t>(px.size());
      }
    }
    // Chunks split elsewhere may round differently; selections agree but for near-ties.
    EXPECT_GE(static_cast<double>(same) / static_cast<double>(total), 0.999) << name;
  }
}

TEST(SessionPress, SnapKvKeepsCapacityPerHeadAndDecodesAtTruePositions) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(600);
  Sequence s(model, 700, pool, snapkv_options(128));
  s.prefill(ids);
  const int64_t full = static_cast<int64_t>(ids.size()) * model.hparams().n_layer * model.hparams().n_head_kv;
  EXPECT_EQ(s.kv().entries(), 128 * model.hparams().n_layer * model.hparams().n_head_kv);
  EXPECT_EQ(s.kv().bytes() * full, s.kv_full_bytes() * static_cast<size_t>(s.kv().entries()));
  const KvCache* kv = &s.kv();
  for (int il = 0; il < model.hparams().n_layer; ++il) {
    for (const KvHeadView& h : kv->layer(il)) {
      ASSERT_EQ(h.n, 128);
      const std::vector<int32_t> p = positions(h);
      EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
      // The window (last 32 prompt tokens) is always kept.
      for (int j = 0; j < 32; ++j) EXPECT_EQ(p[128 - 32 + j], 600 - 32 + j);
    }
    EXPECT_EQ(s.compressor()->kept()[il].kept, 128 * model.hparams().n_head_kv);
    EXPECT_EQ(s.compressor()->kept()[il].total, 600 * model.hparams().n_head_kv);
  }
  s.decode(argmax(s.logits()));
  for (const KvHeadView& h : kv->layer(0)) {
    ASSERT_EQ(h.n, 129);
    EXPECT_EQ(h.pos[128], 600);
  }
}

TEST(SessionPress, ChatTurnsAndQuestionAgnosticPrefillsStayWithinBudget) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(900);
  const std::span<const int32_t> all(ids);
  // Turn 1 is compressed to 128; turn 2 appends 300 tokens and the press re-scores all 428.
  Sequence s(model, 1000, pool, snapkv_options(128));
  s.prefill(all.first(500));
  s.prefill(all.subspan(500, 300));
  for (const KvHeadView& h : s.kv().layer(5)) {
    EXPECT_EQ(h.n, 128);
    EXPECT_EQ(h.pos[h.n - 1], 799);
  }
  // Question-agnostic: the context is compressed alone, the question is appended whole.
  Sequence q(model, 1000, pool, snapkv_options(128));
  q.prefill(all.first(800));
  q.prefill(all.subspan(800, 40), {}, /*compress=*/false);
  for (const KvHeadView& h : q.kv().layer(5)) {
    EXPECT_EQ(h.n, 168);
    EXPECT_EQ(h.pos[127], 799);
  }
}

TEST(SessionPress, RecompressionBoundsTheCacheDuringLongGeneration) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> ids = essay(300);
  SequenceOptions o = snapkv_options(64);
  o.press.window = 8;
  o.press.recompress = 16;
  Sequence s(model, 400, pool, o);
  s.prefill(ids);
  int64_t most = 0;
  for (int i = 0; i < 50; ++i) {
    s.decode(argmax(s.logits()));
    for (const KvHeadView& h : s.kv().layer(0)) most = std::max(most, h.n);
  }
  EXPECT_LT(most, 64 + 16);
  EXPECT_GE(most, 64 + 15);  // it did grow up to the threshold before re-compressing
}

}  // namespace
}  // namespace snapkv

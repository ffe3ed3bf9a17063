// Gemma-3-270M, the hybrid model (five sliding-window layers of 512 per global layer), against
// references nobody here wrote, on the same GGUF: transformers in fp32 (the file dequantized at
// load; logits_gemma3_transformers.json, 1100 positions of an essay, so every window layer drops
// keys) and llama.cpp (greedy_gemma3_llamacpp.json); and a press on it, which compresses only
// the global layers; speculative decoding on it, whose rolled-back drafts leave the window layers
// as plain decoding does. Fixtures: tools/reference/make_logits_fixture.py and
// make_llamacpp_fixture.py with --model models/gemma-3-270m-q4_k_m.gguf.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/generate.h"
#include "engine/sequence.h"
#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "kv/press_inputs.h"
#include "snapkv/tokenizer.h"
#include "util/error.h"
#include "io/gguf.h"
#include "model/model.h"
#include "reference_model.h"
#include "support/paths.h"

namespace snapkv {
namespace {

using nlohmann::json;

struct Gemma3 {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Decoder> model;
};

const Gemma3& gemma3() {
  static const Gemma3 g = [] {
    Gemma3 r;
    r.file = GgufFile::open(test::gemma3_model_path());
    r.model = load_decoder(*r.file);
    return r;
  }();
  return g;
}

TEST(Gemma3, IsAHybridOfWindowAndGlobalLayers) {
  const ModelHparams& h = gemma3().model->hparams();
  EXPECT_EQ(h.arch, "gemma3");
  ASSERT_EQ(h.n_layer, 18);
  for (int il = 0; il < h.n_layer; ++il) EXPECT_EQ(h.layer_window[il], il % 6 == 5 ? 0 : 512) << "layer " << il;
}

// Our logits of every fixture position against transformers', computed in slices of the essay
// (a whole vocabulary of 262,144 per position: 1 GiB for all of them at once).
TEST(Gemma3, LogitsAgreeWithTransformers) {
  const json fx = test::load_fixture("logits_gemma3_transformers.json");
  const auto ids = fx["input_ids"].get<std::vector<int32_t>>();
  const json& pos = fx["positions"];
  ASSERT_GE(ids.size(), 1000u);
  const Decoder& model = *gemma3().model;
  const int n_vocab = model.hparams().n_vocab;
  ThreadPool pool(2);
  Sequence s(model, static_cast<int>(ids.size()), pool, SequenceOptions{KvType::kF32, {}});
  test::LogitsAgreement a;
  double nll = 0, ref_nll = 0;
  const size_t slice = 300;
  for (size_t i0 = 0; i0 < ids.size(); i0 += slice) {
    const size_t n = std::min(slice, ids.size() - i0);
    const std::vector<float> logits = s.prefill_all_logits(std::span(ids).subspan(i0, n));
    for (size_t i = i0; i < i0 + n; ++i) {
      const float* row = logits.data() + (i - i0) * n_vocab;
      const double lse = test::compare_position(row, n_vocab, pos[i], i, a);
      if (i + 1 < ids.size()) {
        nll += lse - row[ids[i + 1]];
        ref_nll += pos[i]["nll"].get<double>();
      }
    }
  }
  const double ppl = std::exp(nll / static_cast<double>(ids.size() - 1));
  const double ref_ppl = std::exp(ref_nll / static_cast<double>(ids.size() - 1));
  std::printf("gemma3: top-1 agreement %d/%zu; max |logit diff| %.4g; max |lse diff| %.4g; ppl %.5f vs "
              "transformers %.5f\n", a.agree, ids.size(), a.max_logit_diff, a.max_lse_diff, ppl, ref_ppl);
  EXPECT_GE(a.agree, static_cast<int>(ids.size() * 99 / 100));
  EXPECT_LT(a.max_logit_diff, 0.005);  // 5.4e-4 measured
  EXPECT_LT(a.max_lse_diff, 0.005);
  EXPECT_NEAR(ppl / ref_ppl, 1.0, 2e-4);
}

// Decode steps one token at a time past the window (the window layers' caches drop keys as they
// go), teacher-forced on the essay, against transformers' logits at the same positions.
TEST(Gemma3, DecodeStepsPastTheWindowAgreeWithTransformers) {
  const json fx = test::load_fixture("logits_gemma3_transformers.json");
  const auto ids = fx["input_ids"].get<std::vector<int32_t>>();
  const json& pos = fx["positions"];
  const Decoder& model = *gemma3().model;
  const int n_vocab = model.hparams().n_vocab;
  ThreadPool pool(2);
  const size_t first = 500, n = 700;  // prefill 500 tokens, then decode to position 699
  Sequence s(model, static_cast<int>(n), pool, SequenceOptions{KvType::kF32, {}});
  s.prefill(std::span(ids).first(first));
  int agree = 0;
  double max_diff = 0;
  for (size_t i = first - 1; i < n - 1; ++i) {
    if (i >= first) s.decode(ids[i]);
    const float* row = s.logits().data();
    const auto top_ids = pos[i]["top5_ids"].get<std::vector<int>>();
    const auto top_logits = pos[i]["top5_logits"].get<std::vector<double>>();
    for (size_t k = 0; k < top_ids.size(); ++k) max_diff = std::max(max_diff, std::fabs(row[top_ids[k]] - top_logits[k]));
    agree += static_cast<int>(std::max_element(row, row + n_vocab) - row) == pos[i]["argmax"].get<int>();
  }
  // A window layer holds no more than its window and a prefill chunk.
  for (int il = 0; il < model.hparams().n_layer; ++il) {
    const int64_t held = s.kv().layer(il)[0].n;
    if (il % 6 == 5) {
      EXPECT_EQ(held, static_cast<int64_t>(n - 1));
    } else {
      EXPECT_LE(held, 511 + kPrefillChunk);
      EXPECT_GE(held, 512);
    }
  }
  std::printf("gemma3 decode: top-1 %d/%zu, max |logit diff| %.4g\n", agree, n - first, max_diff);
  EXPECT_GE(agree, static_cast<int>((n - first) * 98 / 100));
  EXPECT_LT(max_diff, 0.005);
}

size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
}

// Greedy continuations against llama.cpp's and transformers' (make_llamacpp_fixture.py): where
// our path parts from either, that engine was at a near-tie (llama.cpp rounds activations to 8
// bits and keeps an f16 cache; transformers computes in fp32 as we do).
TEST(Gemma3, GreedyContinuationsMatchLlamaCppAndTransformers) {
  const json fx = test::load_fixture("greedy_gemma3_llamacpp.json");
  const Decoder& model = *gemma3().model;
  ThreadPool pool(2);
  int identical = 0;
  ASSERT_GE(fx["cases"].size(), 8u);
  for (const json& c : fx["cases"]) {
    const std::string name = c["name"].get<std::string>();
    const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto llama = c["generated_ids"].get<std::vector<int32_t>>();
    const auto llama_margins = c["margins"].get<std::vector<float>>();
    const auto hf = c["transformers_ids"].get<std::vector<int32_t>>();
    const auto hf_margins = c["transformers_margins"].get<std::vector<float>>();
    Sequence s(model, static_cast<int>(prompt.size() + llama.size() + 1), pool, SequenceOptions{KvType::kF32, {}});
    s.prefill(prompt);
    std::vector<int32_t> ours;
    for (size_t k = 0; k < llama.size(); ++k) {
      const auto row = s.logits();
      ours.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
      s.decode(ours.back());
    }
    const size_t k_hf = first_difference(ours, hf);
    if (k_hf < hf.size()) {
      EXPECT_LT(hf_margins[k_hf], 2e-3f) << name << ": parted from transformers at " << k_hf;
    }
    const size_t k = first_difference(ours, llama);
    if (k == llama.size()) {
      ++identical;
      continue;
    }
    std::printf("gemma3 case %s: parted from llama.cpp at step %zu of %zu (its margin %.4f)\n", name.c_str(), k,
                llama.size(), llama_margins[k]);
    EXPECT_LT(llama_margins[k], 0.3f) << name << ": llama.cpp was sure at step " << k;
  }
  std::printf("gemma3: %d of %zu greedy continuations identical to llama.cpp\n", identical, fx["cases"].size());
  // transformers itself equals llama.cpp in 6 of the 14 (the fixture's meta): llama.cpp's 8-bit
  // activations move this model's logits across its many near-ties (margins of 0.03 to 0.23 where
  // the paths part), while our path equals transformers' in all of them.
  EXPECT_GE(identical, 6);
}

// A state cut back to a prefix (the prompt cache's reuse, speculative decoding's rollback) goes on
// exactly where its window layers still hold what the next query sees, and refuses where they
// dropped it as the state grew.
TEST(Gemma3, PrefixesResumeExactlyOrAreRefused) {
  const json fx = test::load_fixture("logits_gemma3_transformers.json");
  const auto ids = fx["input_ids"].get<std::vector<int32_t>>();
  const Decoder& model = *gemma3().model;
  ThreadPool pool(2);
  const SequenceOptions f32{KvType::kF32, {}};
  Sequence whole(model, 1100, pool, f32);
  whole.prefill(std::span(ids).first(1000));
  ASSERT_TRUE(whole.kv().can_resume_at(900));
  ASSERT_FALSE(whole.kv().can_resume_at(200));  // the window layers kept 257..999
  EXPECT_THROW(whole.prefix_copy(200), Error);
  const std::unique_ptr<Sequence> cut = whole.prefix_copy(900);
  cut->prefill(std::span(ids).subspan(900, 100));
  double max_diff = 0;
  for (size_t i = 0; i < cut->logits().size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(cut->logits()[i] - whole.logits()[i])));
  }
  EXPECT_LT(max_diff, 1e-3);
  whole.truncate(990);
  EXPECT_THROW(whole.truncate(100), Error);
}

// SnapKV on the hybrid: the global layers keep the budget, the window layers their window.
TEST(Gemma3, PressesCompressTheGlobalLayersOnly) {
  const json fx = test::load_fixture("logits_gemma3_transformers.json");
  const auto ids = fx["input_ids"].get<std::vector<int32_t>>();
  const Decoder& model = *gemma3().model;
  ThreadPool pool(2);
  PressConfig press;
  press.press = "snapkv";
  press.capacity = 128;
  Sequence s(model, static_cast<int>(ids.size()) + 8, pool, SequenceOptions{KvType::kF16, press});
  s.prefill(ids);
  for (int il = 0; il < model.hparams().n_layer; ++il) {
    const int64_t held = s.kv().layer(il)[0].n;
    if (il % 6 == 5) {
      EXPECT_EQ(held, 128) << "layer " << il;
    } else {
      EXPECT_GE(held, 512) << "layer " << il;
      EXPECT_LE(held, 511 + kPrefillChunk) << "layer " << il;
    }
  }
  s.decode(ids[5]);
  EXPECT_TRUE(std::all_of(s.logits().begin(), s.logits().end(), [](float x) { return std::isfinite(x); }));

  // The same on a recorded prefill pressed afterwards (snapkv eval fidelity, analyze).
  const RecordedPrefill rec(model, ids, KvType::kF16, 32, PressNeeds{}, pool);
  const KvCache c = rec.pressed(*make_press(press));
  for (int il = 0; il < model.hparams().n_layer; ++il) {
    EXPECT_EQ(c.layer(il)[0].n, il % 6 == 5 ? 128 : rec.full().layer(il)[0].n) << "layer " << il;
  }
}

// kvzip reconstructs the context after it, which the window layers would have dropped: a session
// with it is refused before anything runs, as is pressing a recorded prefill.
TEST(Gemma3, KvzipIsRefused) {
  const Decoder& model = *gemma3().model;
  const auto tok = Tokenizer::from_gguf(*gemma3().file);
  const PressInputs inputs = press_inputs(*tok);
  ThreadPool pool(2);
  PressConfig press;
  press.press = "kvzip";
  press.capacity = 128;
  const auto refused = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "not refused";
  };
  refused([&] { Sequence(model, 600, pool, SequenceOptions{KvType::kF16, press, &inputs}); });
  const std::vector<int32_t> ids(40, 1000);
  const RecordedPrefill rec(model, ids, KvType::kF16, 1, PressNeeds{.reconstruct = true}, pool);
  refused([&] { rec.pressed(*make_press(press), nullptr, &inputs); });
}

// Prompt lookup drafts a passage the prompt repeats; verification passes append several tokens
// to every layer and roll back the rejected ones, in the window layers (which have dropped keys
// by then: the prompt is past 512) as in the global ones. The tokens are plain greedy decoding's,
// full and pressed, and the state left decodes on as plain decoding's does.
TEST(Gemma3, SpeculativeDecodingGivesPlainDecodingsTokens) {
  const auto essay = test::load_fixture("logits_gemma3_transformers.json")["input_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> prompt(essay.begin(), essay.begin() + 700);
  prompt.insert(prompt.end(), essay.begin() + 1, essay.begin() + 40);
  const Decoder& model = *gemma3().model;
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(*gemma3().file);
  ThreadPool pool(2);
  constexpr int kTokens = 40;
  const int n_ctx = static_cast<int>(prompt.size()) + kTokens + 2;
  PressConfig snapkv;
  snapkv.press = "snapkv", snapkv.capacity = 128, snapkv.window = 16;
  for (const PressConfig& pc : {PressConfig{}, snapkv}) {
    SCOPED_TRACE(pc.describe());
    const SequenceOptions o{KvType::kF16, pc};
    // Plain greedy decoding, one token at a time, with each pick's top-1/top-2 margin.
    Sequence plain(model, n_ctx, pool, o);
    plain.prefill(prompt);
    std::vector<int32_t> want;
    std::vector<float> margins;
    for (int i = 0; i < kTokens; ++i) {
      const test::GreedyPick pick = test::greedy_pick(plain.logits());
      want.push_back(pick.id);
      margins.push_back(pick.margin);
      if (i + 1 < kTokens) plain.decode(want.back());
    }

    Sequence spec(model, n_ctx, pool, o);
    GenerateParams p;
    p.max_tokens = kTokens;
    p.stop_at_eog = false;
    p.speculation.mode = SpecMode::kPromptLookup;
    p.speculation.k = 6;
    std::vector<int32_t> got;
    const GenerateStats st = generate(spec, *tokenizer, prompt, p, [&](int32_t id, std::string_view) {
      if (id >= 0) got.push_back(id);
      return true;
    });
    // Parting only at a near-tie; the states differ from there on.
    if (test::expect_same_greedy(got, want, margins, pc.describe()) < want.size()) continue;
    EXPECT_GT(st.n_accepted, 0);
    EXPECT_LT(st.n_accepted, st.n_drafted) << "no draft was rejected: nothing was rolled back";
    EXPECT_LT(st.n_passes, kTokens - 1);
    ASSERT_EQ(spec.tokens(), plain.tokens());
    plain.decode(want.back());
    spec.decode(want.back());
    for (size_t i = 0; i < plain.logits().size(); ++i) ASSERT_NEAR(spec.logits()[i], plain.logits()[i], 5e-2f) << i;
    std::printf("gemma3 %s: %d of %d drafts accepted in %d passes\n", pc.describe().c_str(), st.n_accepted,
                st.n_drafted, st.n_passes);
  }
}

}  // namespace
}  // namespace snapkv

// Speculative decoding on the default model: drafts verified in one multi-token pass and the
// rejected ones rolled back give transformers' greedy continuations (greedy_llamacpp.json,
// tools/reference/make_llamacpp_fixture.py), with prompt lookup and with a draft model (itself
// pressed), and leave the cache, its positions and the window exactly as decoding one token at a
// time leaves them, for the full cache and for pressed caches with per-head lengths (snapkv per
// query head, ada_kv) or re-compressed during generation.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "engine/generate.h"
#include "reference_model.h"
#include "same_cache.h"
#include "snapkv/tokenizer.h"
#include "util/error.h"

namespace snapkv {
namespace {

using nlohmann::json;

const Tokenizer& tokenizer() {
  static const std::unique_ptr<Tokenizer> t = Tokenizer::from_gguf(*test::reference_model().file);
  return *t;
}

struct Generated {
  std::vector<int32_t> ids;
  std::vector<float> margins;  // top-1 minus top-2 logit where each token was picked
  GenerateStats st;
};

// Greedy generation of n tokens after prompt on seq (speculation as given), recording each
// token's margin from the logits it was picked from (the session's, or the verification rows).
Generated generate_greedy(Sequence& seq, const std::vector<int32_t>& prompt, int n, SpecMode mode, int k = 4,
                          Sequence* draft = nullptr) {
  GenerateParams p;
  p.max_tokens = n;
  p.stop_at_eog = false;
  p.speculation.mode = mode;
  p.speculation.k = k;
  Generated g;
  g.st = generate(seq, tokenizer(), prompt, p, [&](int32_t id, std::string_view) {
    if (id >= 0) g.ids.push_back(id);
    return true;
  }, {}, draft);
  return g;
}

TEST(Speculative, PromptLookupAndDraftModelFollowTransformersGreedyContinuations) {
  const json fx = test::load_fixture("greedy_llamacpp.json");
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  int drafted = 0, accepted = 0;
  for (const json& c : fx["cases"]) {
    const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto hf = c["transformers_ids"].get<std::vector<int32_t>>();
    const auto hf_margins = c["transformers_margins"].get<std::vector<float>>();
    const int n = static_cast<int>(hf.size()), n_ctx = static_cast<int>(prompt.size()) + n + 1;
    const std::string name = c["name"].get<std::string>();
    {
      Sequence s(model, n_ctx, pool, SequenceOptions{KvType::kF32, {}});
      const Generated g = generate_greedy(s, prompt, n, SpecMode::kPromptLookup);
      test::expect_same_greedy(g.ids, hf, hf_margins, name + " (prompt lookup)");
      drafted += g.st.n_drafted;
      accepted += g.st.n_accepted;
    }
    {
      // The draft is the same model with a pressed cache: most drafts are right, and every pass
      // rolls the draft's own cache back to what the verification kept.
      Sequence s(model, n_ctx, pool, SequenceOptions{KvType::kF32, {}});
      PressConfig press;
      press.press = "snapkv";
      press.capacity = 64;
      press.window = 8;
      Sequence draft(model, n_ctx, pool, SequenceOptions{KvType::kF16, press});
      const Generated g = generate_greedy(s, prompt, n, SpecMode::kDraft, 3, &draft);
      test::expect_same_greedy(g.ids, hf, hf_margins, name + " (draft model)");
      EXPECT_GT(g.st.n_accepted, g.st.n_drafted / 2) << name;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted) << "both acceptance and rollback were exercised";
}

// The essay, then its opening again: the model goes on quoting the essay, so prompt lookup's
// drafts are mostly right, and wrong wherever the model's text leaves the quote.
std::vector<int32_t> quoting_prompt() {
  const auto essay = test::load_fixture("logits_transformers.json")["input_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> p(essay.begin(), essay.begin() + 600);
  p.insert(p.end(), essay.begin() + 1, essay.begin() + 24);
  return p;
}

PressConfig press(const std::string& name, GqaReduce gqa = GqaReduce::kMean, int recompress = 0) {
  PressConfig c;
  c.press = name;
  c.capacity = 128;
  c.window = 16;
  c.gqa = gqa;
  c.recompress = recompress;
  return c;
}

TEST(Speculative, GreedyTokensCacheAndWindowEqualDecodingOneTokenAtATime) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> prompt = quoting_prompt();
  constexpr int kTokens = 48;
  const int n_ctx = static_cast<int>(prompt.size()) + kTokens + 1;
  // snapkv re-compressing every 12 tokens: passes stop short of each re-compression, which
  // then runs on a decoded token's queries, as without speculation.
  for (const PressConfig& pc : {PressConfig{}, press("snapkv", GqaReduce::kPerQueryHead), press("ada_kv"),
                                press("snapkv", GqaReduce::kMean, 12)}) {
    const SequenceOptions o{KvType::kF16, pc};
    Sequence plain(model, n_ctx, pool, o), spec(model, n_ctx, pool, o);
    const Generated a = generate_greedy(plain, prompt, kTokens, SpecMode::kNone);
    const Generated b = generate_greedy(spec, prompt, kTokens, SpecMode::kPromptLookup, 6);
    if (b.ids != a.ids) {  // only at a near-tie; the states differ from there on
      test::expect_same_greedy(b.ids, a.ids, test::plain_margins(model, prompt, a.ids, o), pc.describe());
      continue;
    }
    EXPECT_GT(b.st.n_accepted, kTokens / 4) << pc.describe();
    EXPECT_LT(b.st.n_accepted, b.st.n_drafted) << pc.describe();
    EXPECT_LT(b.st.n_passes, kTokens - 1) << pc.describe();
    EXPECT_EQ(b.st.n_decoded, a.st.n_decoded) << pc.describe();
    ASSERT_EQ(spec.tokens(), plain.tokens()) << pc.describe();
    test::expect_same_cache(spec.kv(), plain.kv(), pc.describe());
    const std::vector<WindowQueries> wa = plain.windows(), wb = spec.windows();
    ASSERT_EQ(wa.size(), wb.size());
    for (size_t il = 0; il < wa.size(); ++il) {
      EXPECT_EQ(wb[il].pos, wa[il].pos) << "layer " << il;
      EXPECT_GE(wb[il].pos.size(), static_cast<size_t>(pc.window)) << "layer " << il << ": a whole window";
    }
    // And both go on alike: the rolled-back state is a state decoding could have reached.
    plain.decode(a.ids.back());
    spec.decode(a.ids.back());
    for (size_t i = 0; i < plain.logits().size(); ++i) ASSERT_NEAR(spec.logits()[i], plain.logits()[i], 5e-2f);
  }
}

TEST(Speculative, StopsWhereDecodingStopsAndRefusesWhatItCannotDo) {
  const Decoder& model = *test::reference_model().model;
  ThreadPool pool(2);
  const std::vector<int32_t> prompt = quoting_prompt();
  // A context with room for 10 more tokens: drafts never run past it.
  const int n_ctx = static_cast<int>(prompt.size()) + 10;
  Sequence plain(model, n_ctx, pool), spec(model, n_ctx, pool);
  const Generated a = generate_greedy(plain, prompt, 64, SpecMode::kNone);
  const Generated b = generate_greedy(spec, prompt, 64, SpecMode::kPromptLookup, 8);
  EXPECT_EQ(b.ids, a.ids);
  EXPECT_EQ(spec.n_past(), plain.n_past());
  EXPECT_EQ(spec.n_past(), n_ctx);

  // A draft model reads the prompt in the prefill (where its time is counted), not at the first
  // decode step: with nothing generated, it holds the prompt and the target's logits after it.
  Sequence target(model, 2048, pool), draft(model, 2048, pool);
  generate_greedy(target, prompt, 0, SpecMode::kDraft, 3, &draft);
  EXPECT_EQ(draft.tokens(), prompt);
  EXPECT_TRUE(std::ranges::equal(draft.logits(), target.logits()));

  Sequence s(model, 2048, pool);
  GenerateParams p;
  p.speculation.mode = SpecMode::kDraft;
  EXPECT_THROW(generate(s, tokenizer(), prompt, p, [](int32_t, std::string_view) { return true; }), Error);
  p.speculation.k = 0;
  EXPECT_NE(p.validate(), "");

  // TOVA as published re-compresses after every token: no room for a draft, plain decoding.
  const SequenceOptions tova{KvType::kF16, press("tova", GqaReduce::kMean, 1)};
  Sequence tova_plain(model, 2048, pool, tova), tova_spec(model, 2048, pool, tova);
  const Generated c = generate_greedy(tova_plain, prompt, 16, SpecMode::kNone);
  const Generated d = generate_greedy(tova_spec, prompt, 16, SpecMode::kPromptLookup, 8);
  EXPECT_EQ(d.ids, c.ids);
  EXPECT_EQ(d.st.n_drafted, 0);
  test::expect_same_cache(tova_spec.kv(), tova_plain.kv(), "tova+recompress=1");
}

}  // namespace
}  // namespace snapkv

// The question-agnostic mode end to end against kvpress's own pipeline
// (KVPressTextGenerationPipeline, kvpress 0.5.5): the context, in the model's chat template, is
// prefilled and compressed alone; the question and the end of the user turn are prefilled whole
// on the compressed cache; the answer is decoded greedily. Fixture: tests/fixtures/press_pipeline.json
// (tools/reference/make_pipeline_fixture.py): two essay contexts of ~2K and ~4K tokens, each with
// the full cache and, at C = 256, SnapKV, ExpectedAttention and KVzip.
//
// We run the pipeline's own token ids (our tokenizer is checked elsewhere) with an f32 cache, as
// transformers does, and feed kvpress's tokens back, so every step is checked: our logit for
// kvpress's token must be its logit within kLogitTolerance, and our argmax must be its token
// unless its own top-1/top-2 margin is a near-tie. Both sides compute in fp32 in another order,
// and a press may keep another entry where two scores tie within 1e-5 of the largest
// (test_press_reference.cpp), so the logits are close, not equal. Each context is prefilled once,
// recording what its cases' presses need, and every case goes on from a copy pressed as a session
// pressing in prefill would (SessionPress.InPrefillCompressionEqualsPressingARecordedPrefill checks
// that equality).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

#include "eval/recorded_prefill.h"
#include "press_fixture.h"

namespace snapkv {
namespace {

using nlohmann::json;

// Measured: our logits for kvpress's tokens are within 1e-4 to 1.4e-3 of its own, and every one of
// its tokens is our argmax too.
constexpr float kLogitTolerance = 0.01f;
constexpr float kNearTie = 0.01f;

int argmax(std::span<const float> row) {
  return static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
}

// The context of the fixture's prompt, prefilled with what all of its cases' presses need recorded.
std::unique_ptr<RecordedPrefill> record_context(const json& fx, size_t prompt, ThreadPool& pool) {
  std::vector<json> cases;
  std::copy_if(fx.at("cases").begin(), fx.at("cases").end(), std::back_inserter(cases),
               [&](const json& c) { return c.at("prompt").get<size_t>() == prompt; });
  const test::Recording r = test::recording_for(cases);
  const auto context = fx.at("prompts").at(prompt).at("context_ids").get<std::vector<int32_t>>();
  return std::make_unique<RecordedPrefill>(*test::reference_model().model, context, KvType::kF32, r.window, r.needs,
                                           pool);
}

TEST(PressPipeline, QuestionAgnosticGreedyAnswersFollowKvpresssPipeline) {
  const json fx = test::load_fixture("press_pipeline.json");
  ThreadPool pool(2);
  std::vector<std::unique_ptr<RecordedPrefill>> recorded(fx.at("prompts").size());
  std::vector<std::vector<int32_t>> full_answers(fx.at("prompts").size());
  int pressed_unlike_full = 0;
  for (const json& c : fx.at("cases")) {
    const size_t prompt = c.at("prompt").get<size_t>();
    const json& p = fx.at("prompts").at(prompt);
    const auto context = p.at("context_ids").get<std::vector<int32_t>>();
    const auto question = p.at("question_ids").get<std::vector<int32_t>>();
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    const auto logits = c.at("logits").get<std::vector<float>>();
    const auto margins = c.at("margins").get<std::vector<float>>();
    const std::string what = c.at("reference").get<std::string>() + " on " + p.at("name").get<std::string>();
    ASSERT_FALSE(ids.empty()) << what;

    if (!recorded[prompt]) recorded[prompt] = record_context(fx, prompt, pool);
    const auto press = make_press(test::config_from(c.at("options")));
    const auto seq = recorded[prompt]->sequence(press.get(), test::press_inputs_of_default_model(),
                                                static_cast<int>(context.size() + question.size() + ids.size()));
    Sequence& s = *seq;
    s.prefill(question, {}, /*compress=*/false);
    if (press->config().press != "full") {
      for (const KvHeadView& h : s.kv().layer(0)) EXPECT_LT(h.n, static_cast<int64_t>(context.size())) << what;
    }
    float worst = 0;
    std::string parted;  // where and why our path left kvpress's, if it did
    for (size_t k = 0; k < ids.size() && parted.empty(); ++k) {
      const std::span<const float> row = s.logits();
      const float diff = std::abs(row[ids[k]] - logits[k]);
      worst = std::max(worst, diff);
      const std::string step = "step " + std::to_string(k) + ": ";
      if (diff > kLogitTolerance) {
        parted = step + "our logit of kvpress's token " + std::to_string(ids[k]) + " is off by " + std::to_string(diff);
      } else if (argmax(row) != ids[k] && margins[k] >= kNearTie) {
        parted = step + "our token " + std::to_string(argmax(row)) + ", kvpress's " + std::to_string(ids[k]) +
                 " (its margin " + std::to_string(margins[k]) + ")";
      }
      if (k + 1 < ids.size()) s.decode(ids[k]);
    }
    EXPECT_EQ(parted, "") << what;
    std::printf("%-50s %2zu tokens, largest logit difference %.2e%s%s: %s\n", what.c_str(), ids.size(), worst,
                parted.empty() ? "" : ", parted at ", parted.c_str(), c.at("answer").dump().c_str());
    if (press->config().press == "full") {
      full_answers[prompt] = ids;
    } else {
      pressed_unlike_full += ids != full_answers[prompt];
    }
  }
  // The compressed answers are not the full cache's: a press that kept everything would fail here.
  EXPECT_GT(pressed_unlike_full, 0);
}

}  // namespace
}  // namespace snapkv

// Prefill with integer activations (the GEMM of src/ops/gemm_q8.h, taken with decode activations
// kQ16 or kQ8) against HF transformers on the essay of logits_transformers.json: the whole text in
// one prefill, every position's logits, as ReferenceLogits.AgreesWithTransformers does for f32.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/gemm_q8.h"
#include "reference_model.h"

namespace snapkv {
namespace {

using nlohmann::json;

struct PrefillDiffs {
  double mean = 0, p99 = 0, max = 0, max_lse = 0, ppl_ratio = 0;
  double agreement = 0;
};

PrefillDiffs prefill_against_transformers(const Decoder& model) {
  const json fx = test::load_fixture("logits_transformers.json");
  const json& pos = fx["positions"];
  test::EssayLogits essay;
  essay.ids = fx["input_ids"].get<std::vector<int32_t>>();
  ThreadPool pool(2);
  Sequence s(model, static_cast<int>(essay.ids.size()), pool, SequenceOptions{KvType::kF32, {}});
  essay.logits = s.prefill_all_logits(essay.ids);
  const int n_vocab = model.hparams().n_vocab;
  std::vector<double> diffs;
  PrefillDiffs r;
  int agree = 0;
  for (size_t i = 0; i < essay.ids.size(); ++i) {
    const float* row = essay.logits.data() + i * n_vocab;
    agree += static_cast<int>(std::max_element(row, row + n_vocab) - row) == pos[i]["argmax"].get<int>();
    const auto top_ids = pos[i]["top5_ids"].get<std::vector<int>>();
    const auto top_logits = pos[i]["top5_logits"].get<std::vector<double>>();
    for (size_t k = 0; k < top_ids.size(); ++k) diffs.push_back(std::fabs(row[top_ids[k]] - top_logits[k]));
    r.max_lse = std::max(r.max_lse, std::fabs(test::log_sum_exp(row, n_vocab) - pos[i]["lse"].get<double>()));
  }
  std::sort(diffs.begin(), diffs.end());
  for (double d : diffs) r.mean += d / static_cast<double>(diffs.size());
  r.p99 = diffs[diffs.size() * 99 / 100];
  r.max = diffs.back();
  r.agreement = static_cast<double>(agree) / static_cast<double>(essay.ids.size());
  r.ppl_ratio = test::perplexity(essay, n_vocab) / fx["ppl"].get<double>();
  std::printf("top-1 agreement %.4f; |logit diff| mean %.4g, p99 %.4g, max %.4g; max |lse diff| %.4g; ppl ratio %.6f\n",
              r.agreement, r.mean, r.p99, r.max, r.max_lse, r.ppl_ratio);
  return r;
}

bool integer_prefill_runs(MatmulActivations act) {
  WeightMatrix w;
  w.type = GgmlType::Q4_1;  // the default model's type
  return gemm_q8_bits(act, w) != 0;
}

TEST(PrefillActivations, Q16IsAsCloseToTransformersAsF32Bound) {
  if (!integer_prefill_runs(MatmulActivations::kQ16)) GTEST_SKIP() << "no 16-bit integer GEMM on this CPU: prefill is f32";
  const PrefillDiffs d = prefill_against_transformers(*test::reference_model_q16().model);
  // AgreesWithTransformers' bounds for f32, but for the worst of the 5,500 top logits, which the
  // 16-bit activations may move by a little more (0.00504 on an Intel Sapphire Rapids VM).
  EXPECT_GE(d.agreement, 0.99);
  EXPECT_LT(d.p99, 0.005);
  EXPECT_LT(d.max, 0.0075);
  EXPECT_LT(d.max_lse, 0.005);
  EXPECT_NEAR(d.ppl_ratio, 1.0, 2e-4);
}

TEST(PrefillActivations, Q8IsAsCloseToTransformersAsLlamaCppDecode) {
  if (!integer_prefill_runs(MatmulActivations::kQ8)) GTEST_SKIP() << "no 8-bit integer GEMM on this CPU: prefill is f32";
  const PrefillDiffs d = prefill_against_transformers(*test::reference_model_q8().model);
  // ReferenceLogits.Q8DecodeIsAsCloseToTransformersAsLlamaCpp's bounds (llama.cpp rounds to 8 bits
  // too: mean 0.132, p99 0.508).
  EXPECT_LT(d.mean, 0.2);
  EXPECT_LT(d.p99, 0.75);
  EXPECT_GE(d.agreement, 0.92);
  // It must be the 8-bit path that ran: f32 stays within 0.005 of transformers.
  EXPECT_GT(d.mean, 0.02);
}

}  // namespace
}  // namespace snapkv

// The forward pass against HF transformers on the same GGUF (dequantized to fp32): next-token
// argmax over 1100 positions of a Paul Graham essay, logit values, log-partition and perplexity.
// Fixture: tests/fixtures/logits_transformers.json (tools/reference/make_logits_fixture.py).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "reference_model.h"

namespace snapkv {
namespace {

using nlohmann::json;
using test::log_sum_exp;

TEST(ReferenceLogits, AgreesWithTransformers) {
  const json fx = test::load_fixture("logits_transformers.json");
  const json& pos = fx["positions"];
  const test::EssayLogits& essay = test::essay_logits();
  const std::vector<int32_t>& ids = essay.ids;
  const std::vector<float>& logits = essay.logits;
  ASSERT_GE(ids.size(), 1000u);
  const int n_vocab = test::reference_model().model->hparams().n_vocab;
  ASSERT_EQ(logits.size(), ids.size() * n_vocab);

  int agree = 0;
  double max_logit_diff = 0, max_lse_diff = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* row = logits.data() + i * n_vocab;
    const int argmax = static_cast<int>(std::max_element(row, row + n_vocab) - row);
    const int ref_argmax = pos[i]["argmax"].get<int>();
    if (argmax == ref_argmax) {
      ++agree;
    } else {
      // A disagreement must be a near-tie: both candidates within a small gap in both engines.
      const float ref_margin = pos[i]["margin"].get<float>();
      EXPECT_LT(ref_margin, 0.05f) << "position " << i << ": ours " << argmax << ", transformers " << ref_argmax;
      EXPECT_LT(row[argmax] - row[ref_argmax], 0.05f) << "position " << i;
    }
    const auto top_ids = pos[i]["top5_ids"].get<std::vector<int>>();
    const auto top_logits = pos[i]["top5_logits"].get<std::vector<double>>();
    for (size_t k = 0; k < top_ids.size(); ++k) {
      max_logit_diff = std::max(max_logit_diff, std::fabs(row[top_ids[k]] - top_logits[k]));
    }
    const double lse = log_sum_exp(row, n_vocab);
    max_lse_diff = std::max(max_lse_diff, std::fabs(lse - pos[i]["lse"].get<double>()));
  }
  const double agreement = static_cast<double>(agree) / ids.size();
  const double ppl = test::perplexity(essay, n_vocab);
  const double ref_ppl = fx["ppl"].get<double>();
  std::printf("top-1 agreement %.4f over %zu positions; max |logit diff| %.4g; max |lse diff| %.4g; "
              "ppl %.5f vs transformers %.5f\n",
              agreement, ids.size(), max_logit_diff, max_lse_diff, ppl, ref_ppl);
  EXPECT_GE(agreement, 0.99);
  // Both sides compute in fp32 from the same dequantized weights; only the order of the sums
  // differs, which moves logits of magnitude ~20 by about 1e-3 at most (5e-4 measured).
  EXPECT_LT(max_logit_diff, 0.005);
  EXPECT_LT(max_lse_diff, 0.005);
  EXPECT_NEAR(ppl / ref_ppl, 1.0, 2e-4);
}

}  // namespace
}  // namespace snapkv

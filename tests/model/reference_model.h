#pragma once
// Shared by the model tests: the default model loaded once, the reference fixtures, and our
// logits for the essay text of logits_transformers.json, computed once for every test using it.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sequence.h"
#include "io/gguf.h"
#include "model/model.h"
#include "support/paths.h"

namespace snapkv::test {

struct ReferenceModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Decoder> model;
};

inline const ReferenceModel& reference_model() {
  static const ReferenceModel m = [] {
    ReferenceModel r;
    r.file = GgufFile::open(default_model_path());
    r.model = load_decoder(*r.file);
    return r;
  }();
  return m;
}

// The default model with integer decode activations (8 or 16 bits), from the file mapped as the
// CLI opens it for them (cli::ModelFlags::file_memory): the file's pages of the matrices it copies
// are released.
inline ReferenceModel load_reference_model(MatmulActivations act) {
  ReferenceModel r;
  r.file = GgufFile::open(default_model_path(), GgufFile::Memory::kMapped);
  r.model = load_decoder(*r.file, DecoderOptions{act});
  return r;
}

inline const ReferenceModel& reference_model_q8() {
  static const ReferenceModel m = load_reference_model(MatmulActivations::kQ8);
  return m;
}

inline const ReferenceModel& reference_model_q16() {
  static const ReferenceModel m = load_reference_model(MatmulActivations::kQ16);
  return m;
}

inline nlohmann::json load_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name));
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  return nlohmann::json::parse(in);
}

// Ids of the essay text and our logits for every position [n_ids, n_vocab].
struct EssayLogits {
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

inline const EssayLogits& essay_logits() {
  static const EssayLogits e = [] {
    EssayLogits r;
    r.ids = load_fixture("logits_transformers.json")["input_ids"].get<std::vector<int32_t>>();
    ThreadPool pool(2);
    Sequence s(*reference_model().model, static_cast<int>(r.ids.size()), pool, SequenceOptions{KvType::kF32, {}});
    r.logits = s.prefill_all_logits(r.ids);
    return r;
  }();
  return e;
}

inline double log_sum_exp(const float* x, int n) {
  const float mx = *std::max_element(x, x + n);
  double z = 0;
  for (int i = 0; i < n; ++i) z += std::exp(static_cast<double>(x[i]) - mx);
  return mx + std::log(z);
}

// Our logits row for position i of a transformers logits fixture (make_logits_fixture.py)
// against its entry p: counts top-1 agreement (a disagreement must be a near-tie in both
// engines) and the largest differences of the top-5 logits and of the log-partition. Returns the
// row's log-sum-exp.
struct LogitsAgreement {
  int agree = 0;
  double max_logit_diff = 0, max_lse_diff = 0;
};

inline double compare_position(const float* row, int n_vocab, const nlohmann::json& p, size_t i,
                               LogitsAgreement& a) {
  const int argmax = static_cast<int>(std::max_element(row, row + n_vocab) - row);
  const int ref_argmax = p["argmax"].get<int>();
  if (argmax == ref_argmax) {
    ++a.agree;
  } else {
    EXPECT_LT(p["margin"].get<float>(), 0.05f) << "position " << i << ": ours " << argmax << ", transformers "
                                                << ref_argmax;
    EXPECT_LT(row[argmax] - row[ref_argmax], 0.05f) << "position " << i;
  }
  const auto top_ids = p["top5_ids"].get<std::vector<int>>();
  const auto top_logits = p["top5_logits"].get<std::vector<double>>();
  for (size_t k = 0; k < top_ids.size(); ++k) {
    a.max_logit_diff = std::max(a.max_logit_diff, std::fabs(row[top_ids[k]] - top_logits[k]));
  }
  const double lse = log_sum_exp(row, n_vocab);
  a.max_lse_diff = std::max(a.max_lse_diff, std::fabs(lse - p["lse"].get<double>()));
  return lse;
}

// exp(mean negative log-likelihood of ids[1..n) given their prefixes).
inline double perplexity(const EssayLogits& e, int n_vocab) {
  double nll = 0;
  for (size_t i = 0; i + 1 < e.ids.size(); ++i) {
    const float* row = e.logits.data() + i * n_vocab;
    nll += log_sum_exp(row, n_vocab) - row[e.ids[i + 1]];
  }
  return std::exp(nll / static_cast<double>(e.ids.size() - 1));
}

// Logits: only a top-1/top-2 tie this close may flip the argmax between two implementations.
inline constexpr float kExactTie = 2e-3f;

// A logits row's argmax and its top-1 minus top-2 margin.
struct GreedyPick {
  int32_t id;
  float margin;
};
inline GreedyPick greedy_pick(std::span<const float> logits) {
  std::vector<float> row(logits.begin(), logits.end());
  const auto best = std::max_element(row.begin(), row.end());
  const GreedyPick pick{static_cast<int32_t>(best - row.begin()), *best};
  *best = -INFINITY;
  return {pick.id, pick.margin - *std::max_element(row.begin(), row.end())};
}

// The margins of plain greedy decoding along ids after prompt, step by step.
inline std::vector<float> plain_margins(const Decoder& model, const std::vector<int32_t>& prompt,
                                        const std::vector<int32_t>& ids, const SequenceOptions& o) {
  ThreadPool pool(2);
  Sequence s(model, static_cast<int>(prompt.size() + ids.size() + 1), pool, o);
  s.prefill(prompt);
  std::vector<float> margins;
  for (const int32_t id : ids) {
    margins.push_back(greedy_pick(s.logits()).margin);
    s.decode(id);
  }
  return margins;
}

// ours equals want, or parts from it only where want's top-1/top-2 margin was a near-tie.
// Returns the step where they part (want.size() where they do not).
inline size_t expect_same_greedy(const std::vector<int32_t>& ours, const std::vector<int32_t>& want,
                                 const std::vector<float>& want_margins, const std::string& what) {
  EXPECT_EQ(ours.size(), want.size()) << what;
  const size_t n = std::min(ours.size(), want.size());
  const size_t k = static_cast<size_t>(std::mismatch(ours.begin(), ours.begin() + n, want.begin()).first - ours.begin());
  if (k < n) {
    EXPECT_LT(want_margins[k], kExactTie) << what << ": parted at step " << k;
    return k;
  }
  return want.size();
}

}  // namespace snapkv::test

#pragma once
// The cases `snapkv analyze` runs on (snapkv/analyze.h, AnalyzeInput): a suite's, built as
// evaluate_suite builds them, or the caller's, and how they are rendered and scored.
#include <memory>
#include <string_view>
#include <vector>

#include "eval/eval_prompt.h"
#include "eval/suite.h"
#include "snapkv/analyze.h"
#include "snapkv/model.h"

namespace snapkv {

struct AnalysisCases {
  std::vector<EvalCase> cases;
  std::unique_ptr<Suite> suite;  // null for the caller's cases
  ChatTemplate tmpl;
};

// Cases whose prompt plus `extra` generated tokens fit the model's context (a suite leaves the
// others out; a caller's case that does not fit is an error). Error(kInvalidArgument) for an
// invalid input or no case.
AnalysisCases analysis_cases(const Model& model, const AnalyzeInput& input, int extra);

EvalPrompt render(const Model& model, const AnalysisCases& ac, const EvalCase& c, QuestionPlacement placement);

// The suite's score of an answer, or, for the caller's cases, 100 when the answer contains one of
// the case's references (ignoring case) and 0 otherwise.
double analysis_score(const AnalysisCases& ac, const EvalCase& c, std::string_view answer);

}  // namespace snapkv

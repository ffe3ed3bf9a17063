#pragma once
// The readable side of `snapkv eval SUITE`: from the result lines of one run, a markdown summary
// (score per press and capacity, relative to the full cache, per task when there are several,
// heatmap tables) and SVG plots (a heatmap per press and capacity when the suite has one, score
// against capacity for every press).
#include <string>
#include <vector>

#include "snapkv/eval.h"

namespace snapkv::cli {

// r.rows: the results of this run's cases. presses and capacities: the run's, in the order of the
// tables. Returns the markdown, also written to <out>/<suite>.md, with the plots beside it
// (<suite>_budget.svg, <suite>_<press>[_<C>].svg). Throws Error(kBadFile) when a file cannot be
// written.
std::string write_eval_report(const EvalSuiteResult& r, const std::vector<std::string>& presses,
                              const std::vector<int>& capacities, const std::string& out);

}  // namespace snapkv::cli

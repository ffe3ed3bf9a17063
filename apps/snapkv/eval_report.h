#pragma once
// The readable side of `snapkv eval SUITE`: from the result lines of one run, a markdown summary
// (score per press and capacity, relative to the full cache, per task when there are several,
// heatmap tables) and SVG plots (a heatmap per press and capacity when the suite has one, score
// against capacity for every press).
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace snapkv::cli {

struct EvalReport {
  std::string suite, model, score_name, placement;
  double score_max = 100;
  std::pair<std::string, std::string> heatmap;  // meta keys of columns and rows; empty: none
  std::vector<std::string> presses;
  std::vector<int> capacities;
  std::string out;  // folder: <suite>.md, <suite>_budget.svg, <suite>_<press>[_<C>].svg
};

// rows: result lines (case, press, capacity, score, meta fields...) of this run's cases only.
// Returns the markdown, also written to <out>/<suite>.md. Throws Error(kBadFile) when a file
// cannot be written.
std::string write_eval_report(const EvalReport& r, const std::vector<nlohmann::json>& rows);

// Presses run once, with no capacity ("full"), are recorded with capacity 0.
std::vector<int> capacities_of(const std::string& press, const std::vector<int>& capacities);

}  // namespace snapkv::cli

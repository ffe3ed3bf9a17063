#pragma once
// The results a suite run already has: the lines of <out>/<suite>.jsonl.gz (eval/results_file.h)
// and, from runs before the results were compressed, of <out>/<suite>.jsonl, which is read and
// never modified (new lines go to the .gz). A result is one case x press x capacity of one
// question placement and one kind of decoding ("spec": "none", or the speculation's label).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "snapkv/eval.h"

namespace snapkv {

struct SuiteResults {
  std::vector<nlohmann::json> rows;            // of this placement, each cell once (the first line of it)
  std::set<std::string> cells;                 // cell_key of each row
  std::map<std::string, std::string> hashes;   // case id -> input hash its results were run on
};

// "case|press|capacity".
std::string cell_key(const std::string& case_id, const std::string& press, int capacity);

// <out>/<suite>.jsonl.gz: where the results are written.
std::filesystem::path results_path(const std::string& out, const std::string& suite);

// The results of `placement` and `spec` in out (lines without "spec" were decoded without). A .gz whose last member was cut short (a run stopped while
// writing it) is rewritten with its complete lines, so that lines appended after it stay
// readable. Error(kBadFile) naming the file and line for a line that is not a result.
SuiteResults read_suite_results(const std::string& out, const std::string& suite, const std::string& placement,
                                const std::string& spec);

// "none", or "prompt-lookup k=4": the result lines' "spec".
std::string spec_label(const SpeculationParams& spec);

// A result line as a report needs it; heatmap: the suite's meta keys of columns and rows.
EvalSuiteRow suite_row(const nlohmann::json& line, const std::pair<std::string, std::string>& heatmap);

}  // namespace snapkv

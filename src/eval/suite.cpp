#include "eval/suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Suite> (*make)(const SuiteParams&);
};
constexpr Entry kSuites[] = {
    {"niah", make_niah_suite},           {"longeval_lines", make_longeval_lines_suite},
    {"ruler", make_ruler_suite},         {"longbench", make_longbench_suite},
    {"leval", make_leval_suite},
};

}  // namespace

std::vector<std::string> eval_suite_names() {
  std::vector<std::string> names;
  for (const Entry& e : kSuites) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Suite> make_suite(const std::string& name, const SuiteParams& params) {
  for (const Entry& e : kSuites) {
    if (name == e.name) return e.make(params);
  }
  fail(ErrorKind::kInvalidArgument, "unknown evaluation suite '{}' (known: {})", name, fmt::join(eval_suite_names(), ", "));
}

}  // namespace snapkv

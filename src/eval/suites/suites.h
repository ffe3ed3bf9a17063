#pragma once
// The factories of the evaluation suites, one file each; make_suite (eval/suite.cpp) names them.
#include <memory>

#include "eval/suite.h"

namespace snapkv {

std::unique_ptr<Suite> make_niah_suite(const SuiteParams& params);
std::unique_ptr<Suite> make_longeval_lines_suite(const SuiteParams& params);
std::unique_ptr<Suite> make_ruler_suite(const SuiteParams& params);
std::unique_ptr<Suite> make_longbench_suite(const SuiteParams& params);
std::unique_ptr<Suite> make_leval_suite(const SuiteParams& params);

}  // namespace snapkv

// Placeholder until the suite lands.
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<Suite> make_longeval_lines_suite(const SuiteParams&) {
  fail(ErrorKind::kUnsupported, "the longeval_lines suite is not implemented yet");
}

}  // namespace snapkv

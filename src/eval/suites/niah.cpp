// Placeholder until the suite lands.
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<Suite> make_niah_suite(const SuiteParams&) {
  fail(ErrorKind::kUnsupported, "the niah suite is not implemented yet");
}

}  // namespace snapkv

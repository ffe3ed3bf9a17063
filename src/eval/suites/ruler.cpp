// Placeholder until the suite lands.
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<Suite> make_ruler_suite(const SuiteParams&) {
  fail(ErrorKind::kUnsupported, "the ruler suite is not implemented yet");
}

}  // namespace snapkv

#pragma once
// Runs a test body once per SIMD target that this CPU supports (AVX-512, AVX2, SSE4, scalar), so
// every compiled kernel variant meets the same reference; normal dispatch is restored afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "hwy/targets.h"

namespace snapkv::test {

template <class Fn>
void for_each_target(const Fn& fn) {
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t target : {int64_t{HWY_AVX3}, int64_t{HWY_AVX2}, int64_t{HWY_SSE4}, int64_t{HWY_SCALAR}}) {
    if (target != HWY_SCALAR && !(supported & target)) continue;
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    fn();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace snapkv::test

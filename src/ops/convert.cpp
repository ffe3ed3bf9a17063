// f32 -> f16 rows, compiled once per SIMD target (Highway foreach_target).
#include "ops/convert.h"

#include <cstring>

#include "ops/fp16.h"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/convert.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

void F32ToFp16RowT(const float* HWY_RESTRICT src, uint8_t* HWY_RESTRICT dst, int64_t n) {
  int64_t i = 0;
#if HWY_TARGET <= HWY_AVX2
  // F16C is part of these targets: vcvtps2ph rounds to nearest even and keeps NaNs quiet NaNs,
  // exactly as f32_to_fp16. (Without it Highway's emulation truncates, so the others stay scalar.)
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh, reinterpret_cast<hwy::float16_t*>(dst + 2 * i));
  }
#endif
  for (; i < n; ++i) {
    const uint16_t h = f32_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, sizeof(h));
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace snapkv {

HWY_EXPORT(F32ToFp16RowT);

void f32_to_fp16_row(const float* src, void* dst, int64_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToFp16RowT)(src, static_cast<uint8_t*>(dst), n);
}

}  // namespace snapkv
#endif  // HWY_ONCE

// A 16 x 16 f32 transpose in AVX-512 registers, compiled once per instruction set (a Highway
// "-inl" header: include it after hwy/highway.h from a file that is re-included by
// hwy/foreach_target.h). Defined for the AVX-512 targets only; the others transpose in scalar
// loops where they need one (an 8 x 8 AVX2 form gains nothing in the prefill matmul).

#if defined(SNAPKV_OPS_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SNAPKV_OPS_TRANSPOSE_INL_H_
#undef SNAPKV_OPS_TRANSPOSE_INL_H_
#else
#define SNAPKV_OPS_TRANSPOSE_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {

#if HWY_TARGET <= HWY_AVX3
// dst[b * ld_dst + a] = src[a * ld_src + b] for a 16 x 16 tile, in registers: interleave pairs of
// rows, then pairs of pairs, which leaves each 128-bit block holding 4 rows of one column; two
// rounds of 128-bit block shuffles gather each column's four blocks. 64 shuffles where scalar
// copies take 256 loads and 256 stores.
//
// A partial tile: only rows a < n_rows and columns b < n_cols of src are read (the rest count as
// 0), and only dst rows b < n_cols, columns a < dst_cols are written. So dst_cols = 16 pads the
// missing src rows with zeros; dst_cols = n_rows writes nothing past them.
HWY_INLINE void Transpose16x16(const float* src, size_t ld_src, int n_rows, int n_cols, float* dst, size_t ld_dst,
                               int dst_cols) {
  const __mmask16 load_mask = static_cast<__mmask16>((1u << n_cols) - 1);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << dst_cols) - 1);
  __m512 r[16], t[16];
  for (int a = 0; a < 16; ++a) r[a] = a < n_rows ? _mm512_maskz_loadu_ps(load_mask, src + a * ld_src) : _mm512_setzero_ps();
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
  // u[4m + c]: in 128-bit block L, column 4L + c of rows 4m..4m+3.
  for (int m = 0; m < 4; ++m) {
    const __m512d lo = _mm512_castps_pd(t[4 * m]), hi = _mm512_castps_pd(t[4 * m + 1]);
    const __m512d lo2 = _mm512_castps_pd(t[4 * m + 2]), hi2 = _mm512_castps_pd(t[4 * m + 3]);
    r[4 * m + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, lo2));
    r[4 * m + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, lo2));
    r[4 * m + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi, hi2));
    r[4 * m + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi, hi2));
  }
  const auto store = [&](int b, __m512 v) {
    if (b < n_cols) _mm512_mask_storeu_ps(dst + b * ld_dst, store_mask, v);
  };
  // Column 4L + c is block L of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512 x0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), x1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    const __m512 x2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 x3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
    store(0 + c, _mm512_shuffle_f32x4(x0, x2, 0x88));
    store(4 + c, _mm512_shuffle_f32x4(x1, x3, 0x88));
    store(8 + c, _mm512_shuffle_f32x4(x0, x2, 0xdd));
    store(12 + c, _mm512_shuffle_f32x4(x1, x3, 0xdd));
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#endif  // include guard

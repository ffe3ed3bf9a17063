// The x86 kernels of the K-quants, compiled twice from matvec_qk-inl.h as matvec_q8_x86.cpp
// compiles the other types' kernels: for AVX2 and for AVX-512 VNNI.
#include "ops/matvec_qk_x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "ops/row_prefetch.h"

namespace snapkv {

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace qk_avx2 {
#define SNAPKV_Q8_VNNI 0
#include "ops/matvec_qk-inl.h"
#undef SNAPKV_Q8_VNNI
}  // namespace qk_avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
#endif
namespace qk_vnni {
#define SNAPKV_Q8_VNNI 1
#include "ops/matvec_qk-inl.h"
#undef SNAPKV_Q8_VNNI
}  // namespace qk_vnni
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

void qk_x86_rows(bool vnni, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1) {
  // A pass over the activations per call (on each thread), against one over the rows' weights.
  thread_local QkActivations qk;
  const size_t n = static_cast<size_t>(x.n_tok * x.n_in);
  if (w.type == GgmlType::Q6_K) {
    qk.sums16.resize(n / 16);
    for (size_t i = 0; i < n / 16; ++i) {
      int32_t s = 0;
      for (size_t j = 0; j < 16; ++j) s += x.bits == 16 ? x.q16[16 * i + j] : x.q[16 * i + j];  // 16 slots hold 16 codes
      qk.sums16[i] = s;
    }
  }
  if (x.bits == 16 && vnni) q16_split_bytes(x, qk.bytes);
  if (vnni) {
    qk_vnni::Rows(w, x, qk, y, r0, r1);
  } else {
    qk_avx2::Rows(w, x, qk, y, r0, r1);
  }
}

}  // namespace snapkv

#else  // not x86-64 with GCC or clang: only the scalar kernel

namespace snapkv {
void qk_x86_rows(bool, const WeightMatrix&, const Q8Activations&, float*, int64_t, int64_t) {}
}  // namespace snapkv

#endif

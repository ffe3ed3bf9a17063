// The x86 kernels of gemm_q8.h, compiled twice from gemm_q8-inl.h: for AVX2 and for AVX-512
// VNNI (as matvec_q8_x86.cpp is, and for the same reasons).
#include "ops/gemm_q8_x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/gemm_q8_blocks.h"
#include "ops/rows8.h"

namespace snapkv {

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace gemm_avx2 {
#define SNAPKV_GEMM_VNNI 0
#include "ops/gemm_q8-inl.h"
#undef SNAPKV_GEMM_VNNI
}  // namespace gemm_avx2
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
namespace gemm_vnni {
#define SNAPKV_GEMM_VNNI 1
#include "ops/gemm_q8-inl.h"
#undef SNAPKV_GEMM_VNNI
}  // namespace gemm_vnni
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

void gemm_q8_x86_rows(bool vnni, const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1) {
  // The tile's running sums (gemm_q8-inl.h, Out), this thread's, reused from call to call; 32
  // rows a token fit either kernel's tile.
  thread_local std::vector<float> part;
  part.resize(std::max(part.size(), static_cast<size_t>(x.rounded.n_tok * 32)));
  if (vnni) {
    gemm_vnni::Rows(w, x, y, r0, r1, part.data());
  } else {
    gemm_avx2::Rows(w, x, y, r0, r1, part.data());
  }
}

}  // namespace snapkv

#else  // not x86-64 with GCC or clang: only the scalar kernel

namespace snapkv {
void gemm_q8_x86_rows(bool, const WeightMatrix&, const GemmQ8Activations&, float*, int64_t, int64_t) {}
}  // namespace snapkv

#endif

// The x86 kernels of matvec_q8.h, compiled twice from matvec_q8-inl.h: for AVX2 and for AVX-512
// VNNI. Highway (matmul.cpp's dispatch) is not used here: Debian 12's Highway 1.0.3 has no 8-bit
// dot-product operation, and its AVX3_DL target also assumes AVX-VNNI, which Zen 4 lacks.
#include "ops/matvec_q8_x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/matvec_q8_block.h"
#include "ops/row_prefetch.h"

namespace snapkv {

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace q8_avx2 {
#define SNAPKV_Q8_VNNI 0
#include "ops/matvec_q8-inl.h"
#undef SNAPKV_Q8_VNNI
}  // namespace q8_avx2
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
namespace q8_vnni {
#define SNAPKV_Q8_VNNI 1
#include "ops/matvec_q8-inl.h"
#undef SNAPKV_Q8_VNNI
}  // namespace q8_vnni
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Read once: a CPUID instruction in a virtual machine traps to the hypervisor, and these are asked
// on every decode matvec. (__builtin_cpu_supports checks that the OS saves the AVX and AVX-512
// registers; clang 14's does not know F16C, so that bit comes from CPUID leaf 1.)
bool q8_x86_has_avx2() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
    return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

bool q8_x86_has_vnni() {
  static const bool has = q8_x86_has_avx2() && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  return has;
}

void q8_x86_quantize(const float* x, int64_t n_blocks, int8_t* q, float* d4, float* sum4) {
  q8_avx2::QuantizeBlocks(x, n_blocks, q, d4, sum4);
}

void q8_x86_quantize(const float* x, int64_t n_blocks, int16_t* q, float* d4, float* sum4) {
  q8_avx2::QuantizeBlocks(x, n_blocks, q, d4, sum4);
}

void q16_split_bytes(const Q8Activations& x, Q16Bytes& out) {
  const size_t n = static_cast<size_t>(x.n_tok * x.n_in);
  out.high.resize(n);
  out.low.resize(n);
  out.high_sums.resize(n / kQ8Block);
  q8_avx2::SplitBytes(x.q16.data(), static_cast<int64_t>(n) / kQ8Block, out.high.data(), out.low.data(),
                      out.high_sums.data());
}

void q8_x86_rows(bool vnni, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1) {
  if (vnni) {
    // A pass over the activations per call (on each thread), against one over the rows' weights.
    thread_local Q16Bytes bytes;
    if (x.bits == 16 && w.type == GgmlType::Q8_0) q16_split_bytes(x, bytes);
    q8_vnni::Rows(w, x, bytes, y, r0, r1);
  } else {
    q8_avx2::Rows(w, x, Q16Bytes{}, y, r0, r1);
  }
}

}  // namespace snapkv

#else  // not x86-64 with GCC or clang: only the scalar kernel

namespace snapkv {
bool q8_x86_has_avx2() { return false; }
bool q8_x86_has_vnni() { return false; }
void q8_x86_quantize(const float*, int64_t, int8_t*, float*, float*) {}
void q8_x86_quantize(const float*, int64_t, int16_t*, float*, float*) {}
void q16_split_bytes(const Q8Activations&, Q16Bytes&) {}
void q8_x86_rows(bool, const WeightMatrix&, const Q8Activations&, float*, int64_t, int64_t) {}
}  // namespace snapkv

#endif

#pragma once
// The x86 SIMD kernels behind matvec_q8.h (matvec_q8_x86.cpp); false and no-ops elsewhere.
#include <cstdint>
#include <vector>

#include "ops/matvec_q8.h"

namespace snapkv {

bool q8_x86_has_avx2();  // AVX2, FMA and F16C
bool q8_x86_has_vnni();  // and AVX-512 VL, BW and VNNI
// quantize_q8's rounding of n_blocks blocks of 32 floats, in AVX2; the CPU must have it.
void q8_x86_quantize(const float* x, int64_t n_blocks, int8_t* q, float* d4, float* sum4);
void q8_x86_quantize(const float* x, int64_t n_blocks, int16_t* q, float* d4, float* sum4);
// 16-bit codes as bytes, x = 256 * high + low (high signed, low unsigned), for the VNNI kernels,
// which multiply them with 8-bit dot products (matvec_qk-inl.h, and Q8_0 in matvec_q8-inl.h).
struct Q16Bytes {
  std::vector<int8_t> high;        // [n_tok][n_in], in element order (not q16_slot's)
  std::vector<uint8_t> low;        // the same
  std::vector<int32_t> high_sums;  // [n_tok][n_in / 32]: the sum of each block's high bytes
};
// x's 16-bit codes (x.bits 16) split into out, reusing its storage, in AVX2; the CPU must have it.
void q16_split_bytes(const Q8Activations& x, Q16Bytes& out);

// q8_matvec_rows with the AVX-512 VNNI kernel (vnni) or the AVX2 one; the CPU must have it, and
// with 16-bit activations w.rows8 must be set.
void q8_x86_rows(bool vnni, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1);

}  // namespace snapkv

#pragma once
// The x86 SIMD kernels of the K-quants (Q4_K, Q5_K, Q6_K) behind matvec_q8.h
// (matvec_qk_x86.cpp); a no-op elsewhere.
#include <cstdint>
#include <vector>

#include "ops/matvec_q8.h"
#include "ops/matvec_q8_x86.h"

namespace snapkv {

// What the kernels read of the activations besides Q8Activations, made from it once per call.
struct QkActivations {
  std::vector<int32_t> sums16;  // [n_tok][n_in / 16]: the sums of each 16 codes (Q6_K's offset)
  Q16Bytes bytes;               // 16-bit codes as bytes, for the VNNI kernels; empty otherwise
};

// q8_matvec_rows for a K-quant matrix with its interleaved copy (w.rows8; r0 and r1 multiples of
// 8), with the AVX-512 VNNI kernel (vnni) or the AVX2 one; the CPU must have it
// (q8_x86_has_vnni, q8_x86_has_avx2).
void qk_x86_rows(bool vnni, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1);

}  // namespace snapkv

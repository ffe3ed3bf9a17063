#pragma once
// The x86 SIMD kernels behind gemm_q8.h (gemm_q8_x86.cpp); no-ops elsewhere.
#include <cstdint>

#include "ops/gemm_q8.h"

namespace snapkv {

// gemm_q8_rows with the AVX-512 VNNI kernel (vnni) or the AVX2 one; the CPU must have it
// (q8_x86_has_vnni, q8_x86_has_avx2).
void gemm_q8_x86_rows(bool vnni, const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1);

}  // namespace snapkv

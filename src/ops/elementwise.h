#pragma once
#include <cstdint>

namespace snapkv {

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);
// gate[i] = silu(gate[i]) * up[i]  (SwiGLU)
void silu_mul_inplace(float* gate, const float* up, int64_t n);
// y[r, i] += b[i] for n_rows rows of n
void add_bias(float* y, const float* b, int64_t n_rows, int64_t n);

}  // namespace snapkv

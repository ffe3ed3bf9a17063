#pragma once
#include <cstdint>

namespace snapkv {

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);
// gate[i] = silu(gate[i]) * up[i]  (SwiGLU)
void silu_mul_inplace(float* gate, const float* up, int64_t n);
// gate[i] = gelu_tanh(gate[i]) * up[i]  (GeGLU with GELU's tanh approximation, Gemma)
void gelu_tanh_mul_inplace(float* gate, const float* up, int64_t n);
// y[r, i] += b[i] for n_rows rows of n
void add_bias(float* y, const float* b, int64_t n_rows, int64_t n);
// The first i with x[i] the largest of x[0 .. n), as std::max_element finds it, but in SIMD
// (a scalar scan of a whole vocabulary's logits is a visible share of a decode step).
// NaNs are passed over; 0 when n is 0 or every value is NaN.
int64_t argmax(const float* x, int64_t n);

}  // namespace snapkv

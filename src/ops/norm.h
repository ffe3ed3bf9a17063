#pragma once
#include <cstdint>

namespace snapkv {

// y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i] for each of n_rows rows of n floats. y may alias x.
void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);

}  // namespace snapkv

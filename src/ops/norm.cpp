#include "ops/norm.h"

#include <cmath>

namespace snapkv {

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // The sum of squares is accumulated in double: it is cheap here and removes any doubt
    // about rounding against the fp32 references. Four partial sums, so the adds do not wait on
    // one another as one chain of double adds would.
    double part[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int k = 0; k < 4; ++k) part[k] += static_cast<double>(xr[i + k]) * xr[i + k];
    }
    for (; i < n; ++i) part[0] += static_cast<double>(xr[i]) * xr[i];
    const double ss = (part[0] + part[1]) + (part[2] + part[3]);
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (i = 0; i < n; ++i) yr[i] = xr[i] * scale * w[i];
  }
}

}  // namespace snapkv

#pragma once
// The exact product of each weight row (dequantized by dequantize_row) with activations x, and the
// most that rounding x to `bits` bits per block of 32 may move it: the integer paths compute the
// weights times the rounded activations, each off by at most d / 2 = max|x| / 254 (8 bits) or
// max|x| / 65534 (16) of its block, so the error is at most sum |w| * d / 2, plus float rounding.
// The bound the decode tests of matvec_q8 and matvec_qk hold the kernels to.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/dequant.h"
#include "ops/matmul.h"
#include "ops/matvec_q8.h"

namespace snapkv::test {

struct Exact {
  std::vector<double> y, slack;  // [n_tok][n_out]
};

inline Exact exact_product(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tok, int bits) {
  Exact e;
  std::vector<float> row(static_cast<size_t>(w.n_in));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < w.n_out; ++r) {
      dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.n_in);
      double y = 0, slack = 0, mag = 0;
      for (int64_t b = 0; b < w.n_in / kQ8Block; ++b) {
        const float* xb = x.data() + t * w.n_in + b * kQ8Block;
        const float* wb = row.data() + b * kQ8Block;
        double amax = 0, wsum = 0;
        for (int i = 0; i < kQ8Block; ++i) {
          y += double{wb[i]} * xb[i];
          mag += std::fabs(double{wb[i]} * xb[i]);
          amax = std::max(amax, std::fabs(double{xb[i]}));
          wsum += std::fabs(double{wb[i]});
        }
        slack += wsum * amax / (bits == 8 ? 254 : 65534);
      }
      e.y.push_back(y);
      e.slack.push_back(slack * (1 + 1e-4) + 1e-5 * mag);
    }
  }
  return e;
}

}  // namespace snapkv::test

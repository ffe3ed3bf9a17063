#pragma once
// The exact product of each weight row (dequantized by dequantize_row) with activations x, and the
// most that rounding x to `bits` bits per block of 32 may move it: the integer paths compute the
// weights times the rounded activations, each off by at most d / 2 = max|x| / 254 (8 bits) or
// max|x| / 65534 (16) of its block, so the error is at most sum |w| * d / 2, plus float rounding.
// The bound the decode tests of matvec_q8 and matvec_qk hold the kernels to, and the check of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/dequant.h"
#include "ops/matmul.h"
#include "ops/matvec_q8.h"
#include "util/thread_pool.h"

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

// matmul of w (with its interleaved copy) by x with kQ8 and kQ16 against exact_product: each
// within its rounding bound, the same on pool1 and pool2, kQ16 at least 50 times closer than
// kQ8, and further than f32 (so that it is the integer path that ran).
inline void expect_q8_and_q16_within_rounding(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tok,
                                              ThreadPool& pool1, ThreadPool& pool2) {
  std::vector<float> f32(static_cast<size_t>(n_tok * w.n_out));
  matmul(w, x.data(), n_tok, f32.data(), pool1);
  double worst[2] = {0, 0}, worst_f32 = 0;
  for (auto [act, bits] : {std::pair{MatmulActivations::kQ8, 8}, {MatmulActivations::kQ16, 16}}) {
    ASSERT_EQ(matmul_activation_bits(act, n_tok, w), bits);
    const Exact want = exact_product(w, x, n_tok, bits);
    std::vector<float> y1(want.y.size()), y2(want.y.size());
    matmul(w, x.data(), n_tok, y1.data(), pool1, act);
    matmul(w, x.data(), n_tok, y2.data(), pool2, act);
    for (size_t i = 0; i < want.y.size(); ++i) {
      ASSERT_LE(std::fabs(y1[i] - want.y[i]), want.slack[i]) << bits << " bits, output " << i;
      ASSERT_EQ(y1[i], y2[i]) << bits << " bits, output " << i << ": 2 threads changed the result";
      worst[bits / 16] = std::max(worst[bits / 16], std::fabs(y1[i] - want.y[i]));
      worst_f32 = std::max(worst_f32, std::fabs(f32[i] - want.y[i]));
    }
  }
  EXPECT_GT(worst[0], 50 * worst[1]);
  EXPECT_GT(worst[1], 2 * worst_f32);
}

}  // namespace snapkv::test

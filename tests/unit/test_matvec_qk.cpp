// The integer-activation decode path for the K-quants (Q4_K, Q5_K, Q6_K; ops/matvec_q8.h): every
// kernel this CPU runs, on the copy interleaved by 8 rows, against the double reference computed
// from the GGUF blocks (ops/matvec_qk_block.h), with 8- and 16-bit activations; the reference
// against the exact product of the dequantized weights; the interleaved layout against the GGUF
// bytes; and matmul's choice of path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/dequant.h"
#include "ops/matmul.h"
#include "ops/matvec_q8.h"
#include "ops/matvec_qk_block.h"
#include "ops/rows8.h"
#include "support/exact_product.h"
#include "support/random_weights.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

using test::random_floats;
using test::random_matrix;

const GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::string name(GgmlType type) { return std::string(ggml_type_info(type).name); }

// The sum of the magnitudes of the terms that output (t, r) adds up: the scale of the float
// rounding a kernel may show against the double reference.
double term_magnitude(const WeightMatrix& w, const Q8Activations& x, int64_t r, int64_t t) {
  double m = 0;
  const int64_t bytes = ggml_type_info(w.type).block_bytes;
  for (int64_t sb = 0; sb < w.n_in / 256; ++sb) {
    m += qk_block::dot<double, true>(w.type, w.data + r * w.row_bytes + sb * bytes, x, t, sb);
  }
  return m;
}

// y from a kernel against the reference's want: within float rounding, and NaN where it is NaN.
void expect_near_reference(const WeightMatrix& w, const Q8Activations& x, const std::vector<float>& want,
                           const std::vector<float>& y) {
  for (int64_t t = 0; t < x.n_tok; ++t) {
    for (int64_t r = 0; r < w.n_out; ++r) {
      const size_t i = static_cast<size_t>(t * w.n_out + r);
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(y[i])) << "token " << t << " row " << r << ": " << y[i];
        continue;
      }
      ASSERT_NEAR(y[i], want[i], 1e-5 * term_magnitude(w, x, r, t) + 1e-30) << "token " << t << " row " << r;
    }
  }
}

// Runs every kernel on w (with its interleaved copy) and x, rows split as two threads would.
void expect_kernels_match(WeightMatrix w, const AlignedVector<uint8_t>& rows8, const Q8Activations& x) {
  std::vector<float> want(static_cast<size_t>(x.n_tok * w.n_out));
  q8_matvec_reference(w, x, want.data());  // from w.data
  w.rows8 = rows8.data();
  const int64_t split = w.n_out > 8 ? 8 : 0;
  for (Q8Kernel k : q8_kernels_supported()) {
    SCOPED_TRACE(q8_kernel_name(k));
    std::vector<float> y(want.size(), 12345.0f);
    q8_matvec_rows(k, w, x, y.data(), 0, split);
    q8_matvec_rows(k, w, x, y.data(), split, w.n_out);
    ASSERT_NO_FATAL_FAILURE(expect_near_reference(w, x, want, y));
  }
}

TEST(QkMatvec, InterleavedKernelsMatchTheReference) {
  std::mt19937 rng(31);
  for (GgmlType type : kKTypes) {
    for (int64_t n_in : {256, 768}) {
      for (int bits : {8, 16}) {
        for (int64_t n_tok : {1, 2, 3, 4, 5, 8}) {
          const int64_t n_out = 24;
          SCOPED_TRACE(name(type) + " n_in " + std::to_string(n_in) + " n_tok " + std::to_string(n_tok) + ", " +
                       std::to_string(bits) + " bits");
          const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
          const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
          ASSERT_TRUE(rows8_supported(w));
          const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
          ASSERT_EQ(rows8.size(), m.size());
          const std::vector<float> xf = random_floats(static_cast<size_t>(n_in * n_tok), rng);
          Q8Activations x;
          quantize_q8(xf.data(), n_in, n_tok, x, q8_best_kernel(), bits);
          ASSERT_NO_FATAL_FAILURE(expect_kernels_match(w, rows8, x));
        }
      }
    }
  }
}

// Every code and scale at its largest (or Q6_K's code 0, the most negative weight), every
// activation at +-127 or +-32767: the largest int32 sums the kernels form, and a 16-bit Q4_K sum
// that holds codes at 256 times their value.
TEST(QkMatvec, SumsHoldTheLargestCodesAndActivations) {
  std::mt19937 rng(37);
  for (GgmlType type : kKTypes) {
    for (uint8_t fill : {uint8_t{0xFF}, uint8_t{0x00}}) {
      SCOPED_TRACE(name(type) + " codes filled with " + std::to_string(fill));
      const int64_t n_in = 512, n_out = 16;
      std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
      const int64_t bb = ggml_type_info(type).block_bytes;
      for (size_t b = 0; b < m.size(); b += static_cast<size_t>(bb)) {
        if (type == GgmlType::Q6_K) {
          std::memset(m.data() + b, fill, 192);  // low nibbles and high bit pairs
          for (int s = 0; s < 16; ++s) m[b + 192 + s] = static_cast<uint8_t>(s % 2 ? 127 : -128);
        } else {
          std::memset(m.data() + b + 4, 0xFF, 12);  // scales and mins 63
          std::memset(m.data() + b + 16, fill, static_cast<size_t>(bb - 16));
        }
      }
      const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
      const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
      for (int bits : {8, 16}) {
        for (float sign : {1.0f, -1.0f}) {
          const std::vector<float> xf(static_cast<size_t>(n_in), sign);
          Q8Activations x;
          quantize_q8(xf.data(), n_in, 1, x, q8_best_kernel(), bits);
          ASSERT_NO_FATAL_FAILURE(expect_kernels_match(w, rows8, x)) << bits << " bits, sign " << sign;
        }
      }
    }
  }
}

// A block of activations with a NaN or an infinity gets a NaN scale (quantize_q8): every row's
// output for that token is NaN, the other tokens' are not.
TEST(QkMatvec, NonFiniteActivationsGiveNaN) {
  std::mt19937 rng(41);
  for (GgmlType type : kKTypes) {
    for (int bits : {8, 16}) {
      SCOPED_TRACE(name(type) + ", " + std::to_string(bits) + " bits");
      const int64_t n_in = 512, n_out = 16, n_tok = 3;
      const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
      const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
      const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
      std::vector<float> xf = random_floats(static_cast<size_t>(n_in * n_tok), rng);
      xf[300] = std::numeric_limits<float>::quiet_NaN();               // token 0
      xf[2 * n_in + 17] = std::numeric_limits<float>::infinity();      // token 2
      Q8Activations x;
      quantize_q8(xf.data(), n_in, n_tok, x, q8_best_kernel(), bits);
      std::vector<float> want(static_cast<size_t>(n_tok * n_out));
      q8_matvec_reference(w, x, want.data());
      for (int64_t r = 0; r < n_out; ++r) {
        ASSERT_TRUE(std::isnan(want[r]) && std::isnan(want[2 * n_out + r]) && std::isfinite(want[n_out + r]));
      }
      ASSERT_NO_FATAL_FAILURE(expect_kernels_match(w, rows8, x));
    }
  }
}

using test::expect_q8_and_q16_within_rounding;

// matmul with kQ8 and kQ16 on a matrix with its interleaved copy: within the rounding of the
// activations of the exact product, the same on 1 and 2 threads, kQ16 at least 50 times closer
// than kQ8, and further than f32 (so that it is the integer path that ran).
TEST(QkMatvec, MatmulKQ8AndKQ16AreWithinTheRoundingOfTheExactProduct) {
  std::mt19937 rng(47);
  ThreadPool pool1(1), pool2(2);
  for (GgmlType type : kKTypes) {
    for (int64_t n_tok : {1, 3, 8}) {
      SCOPED_TRACE(name(type) + " n_tok " + std::to_string(n_tok));
      const int64_t n_in = 768, n_out = 1536;
      const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
      WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
      const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
      EXPECT_EQ(matmul_activation_bits(MatmulActivations::kQ8, n_tok, w), 0);  // no copy: f32
      EXPECT_EQ(matmul_activation_bits(MatmulActivations::kQ16, n_tok, w), 0);
      w.rows8 = rows8.data();
      const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tok), rng);
      expect_q8_and_q16_within_rounding(w, x, n_tok, pool1, pool2);
      EXPECT_EQ(matmul_activation_bits(MatmulActivations::kQ16, 9, w), 0);  // prefill
    }
  }
}

// matmul_many over matrices of different types with their copies (as a Q4_K_M model's Q, K and V:
// Q4_K, Q4_K, Q6_K) rounds the activations once and runs each matrix's kernel: each output
// against the reference on those rounded activations.
TEST(QkMatvec, MatmulManyMixesTypes) {
  std::mt19937 rng(59);
  ThreadPool pool(2);
  const int64_t n_in = 512, n_tok = 2;
  const GgmlType types[] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q4_0};
  const int64_t n_outs[] = {64, 32, 24, 16};
  std::vector<std::vector<uint8_t>> data;
  std::vector<AlignedVector<uint8_t>> copies;
  std::vector<WeightMatrix> ws;
  std::vector<std::vector<float>> ys;
  for (size_t j = 0; j < std::size(types); ++j) {
    data.push_back(random_matrix(types[j], n_in, n_outs[j], rng));
    ws.push_back(make_weight_matrix(types[j], data.back().data(), n_in, n_outs[j]));
    copies.push_back(interleave_rows8(ws.back()));
    ys.emplace_back(static_cast<size_t>(n_tok * n_outs[j]));
  }
  std::vector<MatmulJob> jobs;
  for (size_t j = 0; j < ws.size(); ++j) {
    ws[j].rows8 = copies[j].data();
    jobs.push_back({&ws[j], ys[j].data()});
  }
  const std::vector<float> xf = random_floats(static_cast<size_t>(n_in * n_tok), rng);
  matmul_many(jobs, xf.data(), n_tok, pool, MatmulActivations::kQ16);
  Q8Activations x;
  quantize_q8(xf.data(), n_in, n_tok, x, q8_best_kernel(), 16);
  for (size_t j = 0; j < ws.size(); ++j) {
    SCOPED_TRACE(name(types[j]));
    std::vector<float> want(ys[j].size()), row(static_cast<size_t>(n_in));
    q8_matvec_reference(ws[j], x, want.data());
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t r = 0; r < n_outs[j]; ++r) {
        // The terms' magnitude: a K-quant's sub-block products and mins; Q4_0's d c x and 8 d x.
        double mag = 0;
        if (types[j] == GgmlType::Q4_0) {
          dequantize_row(types[j], data[j].data() + r * ws[j].row_bytes, row.data(), n_in);
          for (int64_t i = 0; i < n_in; ++i) mag += 3 * std::fabs(double{row[i]} * xf[t * n_in + i]);
        } else {
          mag = term_magnitude(make_weight_matrix(types[j], data[j].data(), n_in, n_outs[j]), x, r, t);
        }
        const size_t i = static_cast<size_t>(t * n_outs[j] + r);
        ASSERT_NEAR(ys[j][i], want[i], 1e-5 * mag) << "token " << t << " row " << r;
      }
    }
  }
}

// The scalar kernel reads the GGUF rows of a matrix without a copy, whose n_out need not be a
// multiple of 8.
TEST(QkMatvec, ScalarKernelReadsTheGgufRows) {
  std::mt19937 rng(53);
  for (GgmlType type : kKTypes) {
    const int64_t n_in = 512, n_out = 13;
    const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
    const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
    EXPECT_FALSE(rows8_supported(w));
    const std::vector<float> xf = random_floats(static_cast<size_t>(n_in * 2), rng);
    Q8Activations x;
    quantize_q8(xf.data(), n_in, 2, x, q8_best_kernel(), 16);
    std::vector<float> want(static_cast<size_t>(2 * n_out)), y(want.size());
    q8_matvec_reference(w, x, want.data());
    for (Q8Kernel k : q8_kernels_supported()) {  // without w.rows8 every choice takes the scalar kernel
      q8_matvec_rows(k, w, x, y.data(), 0, n_out);
      ASSERT_NO_FATAL_FAILURE(expect_near_reference(w, x, want, y)) << name(type) << " " << q8_kernel_name(k);
    }
  }
}

}  // namespace
}  // namespace snapkv

// The integer-activation decode path (ops/matvec_q8.h): the rounding of the activations to 8 and
// 16 bits, every kernel this CPU runs against the double reference of the same arithmetic, and
// matmul with MatmulActivations::kQ8 and kQ16 against the exact f32 product within the error that
// the rounding allows.
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
#include "ops/matvec_q8_block.h"
#include "ops/rows8.h"
#include "support/exact_product.h"
#include "support/random_weights.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

using test::random_floats;
using test::random_matrix;

const GgmlType kQ8Types[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0};

// The code of activation i (of all n_tok * n_in) whatever the bits.
int code_at(const Q8Activations& q, int64_t i) {
  return q.bits == 16 ? q.q16[static_cast<size_t>(q16_slot(i))] : q.q[static_cast<size_t>(i)];
}

TEST(QuantizeQ8, RoundsEachBlockToItsScale) {
  std::mt19937 rng(3);
  std::vector<float> x = random_floats(3 * 64, rng);
  for (int i = 32; i < 64; ++i) x[i] *= 1000.0f;  // block 1: large values
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;      // block 2: all zero
  for (int bits : {8, 16}) {
    const int top = bits == 8 ? 127 : 32767;
    for (Q8Kernel k : q8_kernels_supported()) {
      SCOPED_TRACE(std::string(q8_kernel_name(k)) + ", " + std::to_string(bits) + " bits");
      Q8Activations q;
      quantize_q8(x.data(), 64, 3, q, k, bits);
      ASSERT_EQ((bits == 8 ? q.q.size() : q.q16.size()), x.size());
      ASSERT_EQ(q.d4.size(), 6u * 4);
      for (int b = 0; b < 6; ++b) {
        float amax = 0.0f;
        int code_sum = 0;
        for (int i = 0; i < 32; ++i) {
          amax = std::max(amax, std::fabs(x[b * 32 + i]));
          code_sum += code_at(q, b * 32 + i);
        }
        const float d = amax / static_cast<float>(top);
        for (int j = 0; j < 4; ++j) {
          EXPECT_EQ(q.d4[b * 4 + j], d) << "block " << b;
          EXPECT_FLOAT_EQ(q.sum4[b * 4 + j] * 4, d * static_cast<float>(code_sum)) << "block " << b;
        }
        int largest = 0;
        for (int i = 0; i < 32; ++i) {
          const int v = code_at(q, b * 32 + i);
          largest = std::max(largest, std::abs(v));
          EXPECT_LE(std::fabs(x[b * 32 + i] - d * static_cast<float>(v)), d * 0.5f * (1 + 1e-5f))
              << "block " << b << " element " << i;
        }
        EXPECT_EQ(largest, amax > 0 ? top : 0) << "block " << b;
      }
    }
  }
}

TEST(QuantizeQ8, HalvesRoundAwayFromZero) {
  // 127 sets d = 1 exactly, so each value is its own code before rounding.
  std::vector<float> x = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 0.49999997f, -0.49999997f, 126.5f, -126.5f, 3.25f, -3.75f};
  x.resize(32, 1.5f);
  const std::vector<int> want = {127, 3, -3, 1, -1, 0, 0, 127, -127, 3, -4};
  for (Q8Kernel k : q8_kernels_supported()) {
    Q8Activations q;
    quantize_q8(x.data(), 32, 1, q, k);
    ASSERT_EQ(q.d4[0], 1.0f) << q8_kernel_name(k);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(q.q[i], want[i]) << q8_kernel_name(k) << " element " << i;
    EXPECT_EQ(q.q[31], 2) << q8_kernel_name(k);
    // 32767 sets d = 1 with 16 bits, and ties beyond 8 bits round the same way.
    std::vector<float> x16 = x;
    x16[0] = 32767.0f;
    x16[9] = 200.5f;
    x16[10] = -1000.5f;
    quantize_q8(x16.data(), 32, 1, q, k, 16);
    ASSERT_EQ(q.d4[0], 1.0f) << q8_kernel_name(k);
    std::vector<int> want16 = want;
    want16[0] = 32767;
    want16[9] = 201;
    want16[10] = -1001;
    for (size_t i = 0; i < want16.size(); ++i) {
      EXPECT_EQ(code_at(q, static_cast<int64_t>(i)), want16[i]) << q8_kernel_name(k) << " element " << i;
    }
  }
}

// The AVX2 rounding gives the scalar loop's codes, scales and sums bit for bit, over blocks of
// every size from tiny to huge, with ties, zeros and negative zeros.
TEST(QuantizeQ8, EveryKernelMatchesTheScalarLoop) {
  std::mt19937 rng(11);
  const int64_t n_in = 256, n_tok = 40;
  std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tok), rng);
  std::uniform_int_distribution<int> exponent(-140, 120), code(-254, 254);
  for (int64_t b = 0; b < n_in * n_tok / 32; ++b) {
    const float scale = std::ldexp(1.0f, exponent(rng));
    for (int i = 0; i < 32; ++i) {
      float& v = x[static_cast<size_t>(b * 32 + i)];
      v = b % 3 == 0 ? v * scale : b % 3 == 1 ? static_cast<float>(code(rng)) * 0.5f : (i % 2 ? 0.0f : -0.0f);
    }
    if (b % 3 == 1) x[static_cast<size_t>(b * 32)] = 127.0f;  // d = 1: the halves are ties
  }
  const std::vector<Q8Kernel> kernels = q8_kernels_supported();
  if (kernels.size() == 1) GTEST_SKIP() << "this CPU runs only the scalar loop";
  for (int bits : {8, 16}) {
    Q8Activations want;
    quantize_q8(x.data(), n_in, n_tok, want, Q8Kernel::kScalar, bits);
    for (Q8Kernel k : kernels) {
      if (k == Q8Kernel::kScalar) continue;
      SCOPED_TRACE(std::string(q8_kernel_name(k)) + ", " + std::to_string(bits) + " bits");
      Q8Activations got;
      quantize_q8(x.data(), n_in, n_tok, got, k, bits);
      EXPECT_EQ(got.q, want.q);
      EXPECT_EQ(got.q_pairs, want.q_pairs);
      EXPECT_EQ(got.q16, want.q16);
      EXPECT_EQ(got.d4, want.d4);
      EXPECT_EQ(got.sum4, want.sum4);
    }
  }
}

// Threads round their own columns (ops/ffn.cpp): pieces that meet at pairs of blocks give what one
// call gives, with every kernel; an odd last block stays out of the pairs.
TEST(QuantizeQ8, ColumnsRoundAsTheWholeRows) {
  std::mt19937 rng(12);
  const int64_t n_in = 160, n_tok = 3;  // 5 blocks: 2 pairs and an odd one
  const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tok), rng);
  for (int bits : {8, 16}) {
    for (Q8Kernel k : q8_kernels_supported()) {
      SCOPED_TRACE(std::string(q8_kernel_name(k)) + ", " + std::to_string(bits) + " bits");
      Q8Activations want, got;
      quantize_q8(x.data(), n_in, n_tok, want, Q8Kernel::kScalar, bits);
      q8_resize(got, n_in, n_tok, bits);
      ASSERT_EQ(got.q.size(), want.q.size());
      ASSERT_EQ(got.q_pairs.size(), want.q_pairs.size());
      ASSERT_EQ(got.q16.size(), want.q16.size());
      quantize_q8_columns(x.data(), 64, n_in, got, k);
      quantize_q8_columns(x.data(), 0, 64, got, k);
      quantize_q8_columns(x.data(), 64, 64, got, k);  // nothing
      EXPECT_EQ(got.q, want.q);
      EXPECT_EQ(got.q_pairs, want.q_pairs);
      EXPECT_EQ(got.q16, want.q16);
      EXPECT_EQ(got.d4, want.d4);
      EXPECT_EQ(got.sum4, want.sum4);
      for (auto [i0, i1] : {std::pair<int64_t, int64_t>{32, 64}, {0, 96}, {64, 0}, {-64, 64}, {0, 192}}) {
        EXPECT_THROW(quantize_q8_columns(x.data(), i0, i1, got, k), Error) << i0 << " " << i1;
      }
    }
  }
  Q8Activations bad;
  EXPECT_THROW(q8_resize(bad, 48, 1), Error);
  EXPECT_THROW(q8_resize(bad, 64, -1), Error);
  EXPECT_THROW(q8_resize(bad, 64, 1, 4), Error);
}

TEST(QuantizeQ8, NonFiniteBlocksGiveNaNScalesAndErrorsAreClear) {
  std::vector<float> x(96, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = std::numeric_limits<float>::infinity();
  for (int i = 64; i < 96; ++i) x[i] = 3e38f;  // finite, though their sum is not
  for (Q8Kernel k : q8_kernels_supported()) {
    SCOPED_TRACE(q8_kernel_name(k));
    Q8Activations q;
    for (int bits : {16, 8}) {
      quantize_q8(x.data(), 32, 3, q, k, bits);
      EXPECT_TRUE(std::isnan(q.d4[0]));
      EXPECT_TRUE(std::isnan(q.d4[4]));
      for (int i = 0; i < 64; ++i) EXPECT_EQ(code_at(q, i), 0);
      EXPECT_EQ(q.d4[8], 3e38f / (bits == 8 ? 127.0f : 32767.0f));
      for (int i = 64; i < 96; ++i) EXPECT_EQ(code_at(q, i), bits == 8 ? 127 : 32767);
    }
    EXPECT_THROW(quantize_q8(x.data(), 33, 1, q, k), Error);
    EXPECT_THROW(quantize_q8(x.data(), 0, 1, q, k), Error);
    EXPECT_THROW(quantize_q8(x.data(), 32, -1, q, k), Error);
  }
}

// Sum over blocks of |d_w d_x dot| + |m sum|: the size of the terms a kernel adds up, which
// scales the float rounding it may show against the double reference.
double term_magnitude(const WeightMatrix& w, const Q8Activations& x, int64_t r, int64_t t) {
  const int64_t nb = w.n_in / kQ8Block, bytes = q8_block::bytes(w.type);
  double m = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w.data + r * w.row_bytes + b * bytes;
    const int64_t tb = t * nb + b;
    m += std::fabs(double{q8_block::scale(blk)} * x.d4[tb * 4] * q8_block::dot(w.type, blk, x, tb)) +
         std::fabs(double{q8_block::offset(w.type, blk)} * 4 * x.sum4[tb * 4]);
  }
  return m;
}

// A kernel's y ([n_tok][n_out]) against the reference's want, within float rounding of the terms
// each output adds up.
void expect_near_reference(const WeightMatrix& w, const Q8Activations& x, const std::vector<float>& want,
                           const std::vector<float>& y) {
  for (int64_t t = 0; t < x.n_tok; ++t) {
    for (int64_t r = 0; r < w.n_out; ++r) {
      const size_t i = static_cast<size_t>(t * w.n_out + r);
      ASSERT_NEAR(y[i], want[i], 1e-5 * term_magnitude(w, x, r, t) + 1e-30) << "token " << t << " row " << r;
    }
  }
}

TEST(Q8Matvec, EveryKernelMatchesTheReference) {
  std::mt19937 rng(11);
  for (GgmlType type : kQ8Types) {
    for (int64_t n_in : {32, 96, 576, 1536}) {  // 1 and 3 blocks: the SIMD kernels' odd last block
      for (int64_t n_tok : {1, 2, 3, 4, 5, 8}) {
        const int64_t n_out = 21;
        SCOPED_TRACE(std::string(ggml_type_info(type).name) + " n_in " + std::to_string(n_in) + " n_tok " +
                     std::to_string(n_tok));
        const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
        const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
        const std::vector<float> xf = random_floats(static_cast<size_t>(n_in * n_tok), rng);
        Q8Activations x;
        quantize_q8(xf.data(), n_in, n_tok, x);  // 8 bits: 16 have SIMD kernels on interleaved rows only
        std::vector<float> want(static_cast<size_t>(n_tok * n_out));
        q8_matvec_reference(w, x, want.data());
        for (Q8Kernel k : q8_kernels_supported()) {
          SCOPED_TRACE(q8_kernel_name(k));
          std::vector<float> y(want.size(), 12345.0f);
          q8_matvec_rows(k, w, x, y.data(), 0, 7);  // two calls, as two threads would split the rows
          q8_matvec_rows(k, w, x, y.data(), 7, n_out);
          ASSERT_NO_FATAL_FAILURE(expect_near_reference(w, x, want, y));
        }
      }
    }
  }
}

// The SIMD kernels on the copy interleaved by 8 rows, against the reference on the file's rows,
// with 8- and 16-bit activations; the scalar kernel too, which reads the file's rows.
TEST(Q8Matvec, InterleavedRowsMatchTheReference) {
  std::mt19937 rng(13);
  for (GgmlType type : kQ8Types) {
    for (int64_t n_in : {32, 96, 576}) {
      for (auto [n_tok, bits] : {std::pair{1, 8}, {2, 8}, {3, 8}, {4, 8}, {5, 8}, {8, 8}, {1, 16}, {2, 16}, {3, 16},
                                 {4, 16}, {5, 16}, {8, 16}}) {
        const int64_t n_out = 24;
        SCOPED_TRACE(std::string(ggml_type_info(type).name) + " n_in " + std::to_string(n_in) + " n_tok " +
                     std::to_string(n_tok) + ", " + std::to_string(bits) + " bits");
        std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
        if (type == GgmlType::Q8_0) m[2] = 0x80;  // a code of -128 (|w| = 128 as a byte)
        WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
        ASSERT_TRUE(rows8_supported(w));
        const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
        ASSERT_EQ(rows8.size(), m.size());
        const std::vector<float> xf = random_floats(static_cast<size_t>(n_in * n_tok), rng);
        Q8Activations x;
        quantize_q8(xf.data(), n_in, n_tok, x, q8_best_kernel(), bits);
        std::vector<float> want(static_cast<size_t>(n_tok * n_out));
        q8_matvec_reference(w, x, want.data());
        w.rows8 = rows8.data();
        for (Q8Kernel k : q8_kernels_supported()) {
          SCOPED_TRACE(q8_kernel_name(k));
          std::vector<float> y(want.size(), 12345.0f);
          q8_matvec_rows(k, w, x, y.data(), 0, 8);
          q8_matvec_rows(k, w, x, y.data(), 8, n_out);
          ASSERT_NO_FATAL_FAILURE(expect_near_reference(w, x, want, y));
          if (k != Q8Kernel::kScalar) {
            EXPECT_THROW(q8_matvec_rows(k, w, x, y.data(), 4, n_out), Error);
          }
        }
      }
    }
  }
  std::vector<uint8_t> m = random_matrix(GgmlType::Q4_1, 64, 12, rng);
  EXPECT_FALSE(rows8_supported(make_weight_matrix(GgmlType::Q4_1, m.data(), 64, 12)));  // 12 rows
  EXPECT_THROW(interleave_rows8(make_weight_matrix(GgmlType::Q4_1, m.data(), 64, 12)), Error);
  m = random_matrix(GgmlType::Q5_0, 64, 8, rng);
  EXPECT_FALSE(rows8_supported(make_weight_matrix(GgmlType::Q5_0, m.data(), 64, 8)));  // no kernel
}

TEST(Q8Matvec, Q8_0HandlesTheCodeMinus128) {
  // Only the sign trick of the SIMD kernels meets a code of -128 differently (|w| = 128 as a byte).
  std::mt19937 rng(5);
  std::vector<uint8_t> m = random_matrix(GgmlType::Q8_0, 64, 3, rng);
  for (size_t i = 2; i < m.size(); i += 34) m[i] = 0x80;
  const WeightMatrix w = make_weight_matrix(GgmlType::Q8_0, m.data(), 64, 3);
  std::vector<float> xf(64, -1.0f);
  Q8Activations x;
  quantize_q8(xf.data(), 64, 1, x);
  std::vector<float> want(3), y(3);
  q8_matvec_reference(w, x, want.data());
  for (Q8Kernel k : q8_kernels_supported()) {
    q8_matvec_rows(k, w, x, y.data(), 0, 3);
    for (int r = 0; r < 3; ++r) EXPECT_NEAR(y[r], want[r], 1e-5 * std::fabs(want[r])) << q8_kernel_name(k);
  }
}

// The 16-bit kernels keep some 4-bit codes in place, 16 or 256 times their value, in the int32
// sums of a block, and AVX2's 8-bit kernel adds a whole block's 16-bit pair sums for one token
// before widening them: every code at its largest and every activation at +-32767 (+-127) is the
// largest those sums get.
TEST(Q8Matvec, SumsHoldTheLargestCodesAndActivations) {
  std::mt19937 rng(19);
  for (GgmlType type : kQ8Types) {
    SCOPED_TRACE(ggml_type_info(type).name);
    std::vector<uint8_t> m = random_matrix(type, 64, 8, rng);
    const int64_t bb = q8_block::bytes(type), at = q8_block::codes_at(type);
    for (size_t b = 0; b < m.size(); b += bb) std::memset(m.data() + b + at, type == GgmlType::Q8_0 ? 0x7F : 0xFF, bb - at);
    WeightMatrix w = make_weight_matrix(type, m.data(), 64, 8);
    const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
    w.rows8 = rows8.data();  // the reference reads the file's rows
    for (auto [bits, sign] : {std::pair{8, 1.0f}, {8, -1.0f}, {16, 1.0f}, {16, -1.0f}}) {
      SCOPED_TRACE(std::to_string(bits) + " bits, sign " + std::to_string(sign));
      const std::vector<float> xf(64, sign);
      Q8Activations x;
      quantize_q8(xf.data(), 64, 1, x, q8_best_kernel(), bits);
      std::vector<float> want(8);
      q8_matvec_reference(w, x, want.data());
      for (Q8Kernel k : q8_kernels_supported()) {
        std::vector<float> y(8);
        q8_matvec_rows(k, w, x, y.data(), 0, 8);
        ASSERT_NO_FATAL_FAILURE(expect_near_reference(w, x, want, y)) << q8_kernel_name(k);
      }
    }
  }
}

using test::expect_q8_and_q16_within_rounding;

// kQ16 on a matrix with its interleaved copy (without one it runs as f32, below): within its
// rounding, and at least 50 times closer to the exact product than kQ8 (258 at most), yet further
// than f32, so that it is the 16-bit path that ran.
TEST(Q8Matvec, MatmulKQ8AndKQ16AreWithinTheRoundingOfTheExactProduct) {
  std::mt19937 rng(17);
  ThreadPool pool1(1), pool2(2);
  for (GgmlType type : kQ8Types) {
    for (int64_t n_tok : {1, 3, 8}) {
      SCOPED_TRACE(std::string(ggml_type_info(type).name) + " n_tok " + std::to_string(n_tok));
      const int64_t n_in = 576, n_out = 1536;  // enough work to split among threads
      const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
      WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
      const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
      w.rows8 = rows8.data();
      const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tok), rng);
      expect_q8_and_q16_within_rounding(w, x, n_tok, pool1, pool2);
    }
  }
}

TEST(Q8Matvec, OtherCallsRunAsF32) {
  // Weight types without an integer kernel ignore kQ8 and kQ16, in decode and in prefill (more
  // than 8 tokens, where Q4_0/Q4_1/Q8_0 and the K-quants take the integer GEMM, test_gemm_q8.cpp),
  // and decode with kQ16 ignores a matrix without its interleaved copy.
  std::mt19937 rng(23);
  ThreadPool pool(2);
  for (auto [type, n_tok] : {std::pair{GgmlType::F16, int64_t{9}}, std::pair{GgmlType::F16, int64_t{1}},
                             std::pair{GgmlType::Q4_K, int64_t{2}}}) {
    const int64_t n_in = 256, n_out = 40;
    const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
    const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
    const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tok), rng);
    std::vector<float> a(static_cast<size_t>(n_tok * n_out)), b(a.size()), c(a.size());
    matmul(w, x.data(), n_tok, a.data(), pool, MatmulActivations::kQ8);
    matmul(w, x.data(), n_tok, b.data(), pool);
    matmul(w, x.data(), n_tok, c.data(), pool, MatmulActivations::kQ16);
    EXPECT_EQ(a, b) << ggml_type_info(type).name << " n_tok " << n_tok;
    EXPECT_EQ(c, b) << ggml_type_info(type).name << " n_tok " << n_tok;
  }
  const std::vector<uint8_t> m = random_matrix(GgmlType::Q4_1, 64, 16, rng);
  const WeightMatrix w = make_weight_matrix(GgmlType::Q4_1, m.data(), 64, 16);
  const std::vector<float> x = random_floats(64, rng);
  std::vector<float> a(16), b(16);
  matmul(w, x.data(), 1, a.data(), pool, MatmulActivations::kQ16);
  matmul(w, x.data(), 1, b.data(), pool);
  EXPECT_EQ(a, b) << "Q4_1 without an interleaved copy";
  EXPECT_EQ(matmul_activation_bits(MatmulActivations::kQ16, 1, w), 0);
}

}  // namespace
}  // namespace snapkv

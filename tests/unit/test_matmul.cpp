// SIMD matmul / get_row against the scalar references, for every supported weight type, many
// shapes, misaligned activations, 1 and 2 threads, and every SIMD target this CPU can run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/dequant.h"
#include "ops/fp16.h"
#include "ops/matmul.h"
#include "ops/rows8.h"
#include "support/random_weights.h"
#include "support/simd_targets.h"
#include "util/aligned_vector.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

using test::random_floats;
using test::random_matrix;

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::string type_name(GgmlType t) { return std::string(ggml_type_info(t).name); }

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

TEST(GetRow, BitIdenticalToReferenceDequant) {
  std::mt19937 rng(11);
  for (GgmlType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    const uint32_t be = ggml_type_info(type).block_elems;
    for (int64_t n_in : {int64_t{be}, int64_t{be} * 3, be == 1 ? int64_t{45} : int64_t{be} * 5}) {
      const int64_t n_out = 5;
      const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng, /*odd_scales=*/true);
      const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
      std::vector<float> want(static_cast<size_t>(n_in));
      std::vector<float> got(static_cast<size_t>(n_in) + 1);
      test::for_each_target([&] {
        for (int64_t r = 0; r < n_out; ++r) {
          dequantize_row(type, w.data + r * w.row_bytes, want.data(), n_in);
          float* dst = got.data() + (r % 2);  // misaligned half of the time
          get_row(w, r, dst);
          for (int64_t i = 0; i < n_in; ++i) {
            ASSERT_TRUE(same_float(dst[i], want[i]))
                << "n_in " << n_in << " row " << r << " elem " << i << ": " << dst[i] << " vs " << want[i];
          }
        }
      });
    }
  }
}

// matmul_reference's outputs and how far an f32 sum may stray from each.
//
// Tolerance: the dequantized weights are bit-identical to the reference (see GetRow above), so
// the only differences are in how the n_in products are summed. The reference sums exactly (in
// double) and rounds once; the kernels sum in f32, and each output is accumulated along a chain
// of at most n_in + a few additions, so by the standard bound |error| <= gamma_(n_in + 8) *
// sum_i |x_i w_i| with gamma_n ~ n * 2^-24. A single wrong weight or activation would typically
// exceed this by orders of magnitude.
struct Expected {
  std::vector<float> y;
  std::vector<double> bound;
};

Expected expected(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tok) {
  const size_t ny = static_cast<size_t>(n_tok * w.n_out);
  Expected e{std::vector<float>(ny), std::vector<double>(ny)};
  matmul_reference(w, x.data(), n_tok, e.y.data());
  const double gamma = static_cast<double>(w.n_in + 8) * std::ldexp(1.0, -24);
  std::vector<float> row(static_cast<size_t>(w.n_in));
  for (int64_t o = 0; o < w.n_out; ++o) {
    dequantize_row(w.type, w.data + o * w.row_bytes, row.data(), w.n_in);
    for (int64_t t = 0; t < n_tok; ++t) {
      double s = 0;
      for (int64_t i = 0; i < w.n_in; ++i) s += std::fabs(static_cast<double>(x[t * w.n_in + i]) * row[i]);
      e.bound[t * w.n_out + o] = gamma * s;
    }
  }
  return e;
}

// Checks matmul against matmul_reference for one matrix and one batch of activations, for every
// target, 1 and 2 threads and two activation/output alignments.
void check_matmul(GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tok, std::mt19937& rng,
                  ThreadPool& pool1, ThreadPool& pool2) {
  SCOPED_TRACE(type_name(type) + " n_in " + std::to_string(n_in) + " n_out " +
               std::to_string(n_out) + " n_tok " + std::to_string(n_tok));
  const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
  const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
  const size_t nx = static_cast<size_t>(n_tok * n_in), ny = static_cast<size_t>(n_tok * n_out);
  const std::vector<float> x = random_floats(nx, rng);
  const Expected want = expected(w, x, n_tok);

  constexpr float kSentinel = 12345.0f;
  std::vector<float> xbuf(nx + 1), ybuf(ny + 2), first(ny);
  test::for_each_target([&] {
    for (ThreadPool* pool : {&pool1, &pool2}) {
      for (int shift = 0; shift < 2; ++shift) {
        float* xs = xbuf.data() + shift;
        std::memcpy(xs, x.data(), nx * sizeof(float));
        std::fill(ybuf.begin(), ybuf.end(), kSentinel);
        float* ys = ybuf.data() + shift;
        matmul(w, xs, n_tok, ys, *pool);
        if (shift == 1) {
          ASSERT_EQ(ybuf[0], kSentinel) << "write before y";
        }
        ASSERT_EQ(ys[ny], kSentinel) << "write past y";
        for (size_t i = 0; i < ny; ++i) {
          const double err = std::fabs(static_cast<double>(ys[i]) - want.y[i]);
          ASSERT_LE(err, want.bound[i])
              << "threads " << pool->size() << " shift " << shift << " token " << i / n_out
              << " output " << i % n_out << ": got " << ys[i] << " want " << want.y[i];
        }
        // Each output is summed in the same order whatever the thread count and alignment.
        if (pool == &pool1 && shift == 0) {
          std::memcpy(first.data(), ys, ny * sizeof(float));
        } else {
          ASSERT_EQ(std::memcmp(first.data(), ys, ny * sizeof(float)), 0)
              << "threads " << pool->size() << " shift " << shift << " changed the result";
        }
      }
    }
  });
}

std::vector<int64_t> n_in_cases(GgmlType type) {
  switch (ggml_type_info(type).block_elems) {
    case 1: return {45, 128, 300};          // includes partial 32-element granules
    case 32: return {32, 96, 416, 576};     // 416 = 3 * 128 + 32: a short last K chunk
    default: return {256, 512, 768};
  }
}

class MatmulTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulTest, MatchesReference) {
  const GgmlType type = GetParam();
  std::mt19937 rng(1234 + static_cast<int>(type));
  ThreadPool pool1(1), pool2(2);
  for (int64_t n_in : n_in_cases(type)) {
    for (int64_t n_out : {1, 13, 50}) {
      for (int64_t n_tok : {1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 100}) {
        check_matmul(type, n_in, n_out, n_tok, rng, pool1, pool2);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(MatmulTest, LargerShapes) {
  // Enough work for the kernels to split rows across threads (products under 2^20 multiply-adds
  // run on the calling thread only); several token chunks (more than 256 tokens) and many row
  // tiles for prefill.
  const GgmlType type = GetParam();
  std::mt19937 rng(99 + static_cast<int>(type));
  ThreadPool pool1(1), pool2(2);
  const int64_t n_in = ggml_type_info(type).block_elems == 256 ? 1024 : 608;
  for (int64_t n_tok : {1, 3, 8}) check_matmul(type, n_in, 1777, n_tok, rng, pool1, pool2);
  check_matmul(type, n_in, 77, 530, rng, pool1, pool2);
}

// A decode call of 2 to 8 tokens (a speculative verification pass) gives each token bit for bit
// what a call of that token alone gives (one-token decode), with f32 activations and, for the
// types that have them, 8- and 16-bit ones (on the copy interleaved by 8 rows): a cache filled by
// verification passes is the cache decoding one token at a time fills.
TEST_P(MatmulTest, SeveralTokensDecodeAsEachAlone) {
  const GgmlType type = GetParam();
  std::mt19937 rng(57 + static_cast<int>(type));
  ThreadPool pool(2);
  const int64_t n_in = ggml_type_info(type).block_elems == 256 ? 768 : 352, n_out = 40, n_tok = 8;
  const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
  WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
  AlignedVector<uint8_t> rows8;
  if (rows8_supported(w)) {
    rows8 = interleave_rows8(w);
    w.rows8 = rows8.data();
  }
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tok * n_in), rng);
  test::for_each_target([&] {
    for (MatmulActivations act : {MatmulActivations::kF32, MatmulActivations::kQ8, MatmulActivations::kQ16}) {
      SCOPED_TRACE("activation bits " + std::to_string(matmul_activation_bits(act, 1, w)));
      std::vector<float> alone(static_cast<size_t>(n_tok * n_out));
      for (int64_t t = 0; t < n_tok; ++t) matmul(w, x.data() + t * n_in, 1, alone.data() + t * n_out, pool, act);
      for (int64_t n = 2; n <= n_tok; ++n) {
        std::vector<float> y(static_cast<size_t>(n * n_out));
        matmul(w, x.data(), n, y.data(), pool, act);
        ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0) << n << " tokens";
      }
    }
  });
}

TEST(MatmulMany, MatchesReferenceAndSeparateCalls) {
  // Q, K and V of the default model's shapes in three types, sharing the activations; decode
  // (1 and 4 tokens: one pool job for the three) and prefill (9 tokens: one matmul after another).
  std::mt19937 rng(7);
  ThreadPool pool1(1), pool2(2);
  const int64_t n_in = 576;
  const std::vector<uint8_t> mq = random_matrix(GgmlType::Q4_1, n_in, 576, rng);
  const std::vector<uint8_t> mk = random_matrix(GgmlType::Q8_0, n_in, 192, rng);
  const std::vector<uint8_t> mv = random_matrix(GgmlType::F16, n_in, 13, rng);
  const WeightMatrix ws[] = {make_weight_matrix(GgmlType::Q4_1, mq.data(), n_in, 576),
                             make_weight_matrix(GgmlType::Q8_0, mk.data(), n_in, 192),
                             make_weight_matrix(GgmlType::F16, mv.data(), n_in, 13)};
  for (int64_t n_tok : {1, 4, 9}) {
    SCOPED_TRACE("n_tok " + std::to_string(n_tok));
    const std::vector<float> x = random_floats(static_cast<size_t>(n_tok * n_in), rng);
    test::for_each_target([&] {
      for (ThreadPool* pool : {&pool1, &pool2}) {
        std::vector<std::vector<float>> ys;
        std::vector<MatmulJob> jobs;
        for (const WeightMatrix& w : ws) ys.emplace_back(static_cast<size_t>(n_tok * w.n_out));
        for (size_t j = 0; j < ys.size(); ++j) jobs.push_back({&ws[j], ys[j].data()});
        matmul_many(jobs, x.data(), n_tok, *pool);
        for (size_t j = 0; j < ys.size(); ++j) {
          const Expected want = expected(ws[j], x, n_tok);
          for (size_t i = 0; i < ys[j].size(); ++i) {
            ASSERT_LE(std::fabs(static_cast<double>(ys[j][i]) - want.y[i]), want.bound[i])
                << "matrix " << j << " threads " << pool->size() << " output " << i;
          }
          std::vector<float> alone(ys[j].size());
          matmul(ws[j], x.data(), n_tok, alone.data(), *pool);
          ASSERT_EQ(std::memcmp(alone.data(), ys[j].data(), alone.size() * sizeof(float)), 0)
              << "matrix " << j << " threads " << pool->size() << ": not the same as matmul";
        }
      }
    });
  }
  const std::vector<uint8_t> other = random_matrix(GgmlType::Q4_1, 32, 4, rng);
  const WeightMatrix narrow = make_weight_matrix(GgmlType::Q4_1, other.data(), 32, 4);
  std::vector<float> x(n_in), y(576), y2(4);
  const MatmulJob mixed[] = {{&ws[0], y.data()}, {&narrow, y2.data()}};
  EXPECT_THROW(matmul_many(mixed, x.data(), 1, pool1), Error);
}

// With a copy interleaved by 8 rows (rows8.h), prefill and get_row read the copy, so that the
// file's rows may be out of memory: here data holds another matrix, and every target still gives
// the results of the copied one (within the reference's bound, and bit for bit those of its own
// rows), for a range of columns that ends in a partial tile.
TEST(Matmul, PrefillAndGetRowReadTheInterleavedCopy) {
  std::mt19937 rng(21);
  ThreadPool pool(2);
  const int64_t n_out = 48, n_tok = 20;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    const int64_t n_in = ggml_type_info(type).block_elems == 256 ? 768 : 320;
    const std::vector<uint8_t> m = random_matrix(type, n_in, n_out, rng);
    const std::vector<uint8_t> decoy = random_matrix(type, n_in, n_out, rng);
    const WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
    const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
    WeightMatrix copy = make_weight_matrix(type, decoy.data(), n_in, n_out);
    copy.rows8 = rows8.data();
    const std::vector<float> x = random_floats(static_cast<size_t>(n_tok * n_in), rng);
    const Expected want = expected(w, x, n_tok);
    test::for_each_target([&] {
      std::vector<float> y(want.y.size()), y_rows(want.y.size());
      matmul(copy, x.data(), n_tok, y.data(), pool);
      matmul(w, x.data(), n_tok, y_rows.data(), pool);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_LE(std::fabs(static_cast<double>(y[i]) - want.y[i]), want.bound[i]) << "output " << i;
      }
      EXPECT_EQ(std::memcmp(y.data(), y_rows.data(), y.size() * sizeof(float)), 0);
      std::vector<float> got(static_cast<size_t>(n_in)), row(got.size());
      for (int64_t r = 0; r < n_out; ++r) {
        get_row(copy, r, got.data());
        dequantize_row(type, m.data() + r * w.row_bytes, row.data(), n_in);
        ASSERT_EQ(std::memcmp(got.data(), row.data(), row.size() * sizeof(float)), 0) << "row " << r;
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& p) {
                           return type_name(p.param);
                         });

TEST(Matmul, Errors) {
  ThreadPool pool(1);
  std::vector<uint8_t> data(1024);
  float x[64] = {}, y[64] = {};
  auto kind_of = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  EXPECT_EQ(kind_of([&] { make_weight_matrix(GgmlType::Q2_K, data.data(), 256, 1); }),
            ErrorKind::kUnsupported);
  EXPECT_EQ(kind_of([&] { make_weight_matrix(GgmlType::Q4_0, data.data(), 48, 1); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { make_weight_matrix(GgmlType::Q4_K, data.data(), 128, 1); }),
            ErrorKind::kInvalidArgument);
  WeightMatrix w = make_weight_matrix(GgmlType::Q8_0, data.data(), 32, 2);
  EXPECT_EQ(kind_of([&] { matmul(w, x, -1, y, pool); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { get_row(w, 2, y); }), ErrorKind::kOutOfRange);
  WeightMatrix short_rows = w;
  short_rows.row_bytes = 33;
  EXPECT_EQ(kind_of([&] { matmul(short_rows, x, 1, y, pool); }), ErrorKind::kInvalidArgument);
  y[0] = 7.0f;
  matmul(w, x, 0, y, pool);  // no tokens: nothing written
  EXPECT_EQ(y[0], 7.0f);
}

TEST(Matmul, RowStrideLargerThanRow) {
  // Rows padded to a larger stride (a view into a bigger buffer) are read at row_bytes.
  std::mt19937 rng(5);
  const int64_t n_in = 64, n_out = 9, n_tok = 12;
  const std::vector<uint8_t> dense = random_matrix(GgmlType::Q4_1, n_in, n_out, rng);
  const size_t rb = ggml_row_bytes(ggml_type_info(GgmlType::Q4_1), n_in);
  const size_t stride = rb + 24;
  std::vector<uint8_t> padded(stride * n_out, 0xEE);
  for (int64_t r = 0; r < n_out; ++r) std::memcpy(padded.data() + r * stride, dense.data() + r * rb, rb);
  WeightMatrix w = make_weight_matrix(GgmlType::Q4_1, padded.data(), n_in, n_out);
  w.row_bytes = stride;
  const WeightMatrix wd = make_weight_matrix(GgmlType::Q4_1, dense.data(), n_in, n_out);
  const std::vector<float> x = random_floats(n_tok * n_in, rng);
  std::vector<float> a(n_tok * n_out), b(n_tok * n_out);
  ThreadPool pool(2);
  matmul(w, x.data(), n_tok, a.data(), pool);
  matmul(wd, x.data(), n_tok, b.data(), pool);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace snapkv

// The prefill integer GEMM (gemm_q8.h): every kernel this CPU runs against a double reference
// built from dequantize_row, for every weight type and both activation widths, at shapes with
// tails (tokens not a multiple of the register block, rows not a multiple of the vector, several
// column chunks); non-finite activations; and the determinism the header promises (kernels,
// thread counts, interleaved copies, matmul's dispatch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/dequant.h"
#include "ops/fp16.h"
#include "ops/gemm_q8.h"
#include "ops/matmul.h"
#include "ops/rows8.h"
#include "support/random_weights.h"
#include "util/aligned_vector.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

const GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::string name(GgmlType t) { return std::string(ggml_type_info(t).name); }

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}

// |min| of block b (32 weights) of a row, for the types whose weights are scale * code + min,
// read from the block bytes (dequant.h's layouts); 0 for the others.
double abs_min(GgmlType type, const uint8_t* row, int64_t b) {
  switch (type) {
    case GgmlType::Q4_1: return std::fabs(half(row + b * 20 + 2));
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const uint8_t* sb = row + (b / 8) * (type == GgmlType::Q4_K ? 144 : 176);
      uint8_t sc, mn;
      unpack_scale_min_k4(static_cast<int>(b % 8), sb + 4, &sc, &mn);
      return std::fabs(half(sb + 2) * mn);
    }
    case GgmlType::Q4_0: return 8.0 * std::fabs(half(row + b * 18));  // w = d * c - 8 d
    case GgmlType::Q6_K: {
      const uint8_t* sb = row + (b / 8) * 210;  // w = d * sc * c - 32 d * sc, per 16
      const int8_t* sc = reinterpret_cast<const int8_t*>(sb + 192);
      double m = 0;
      for (int i = 0; i < 16; ++i) m = std::max(m, 32.0 * std::fabs(half(sb + 208) * sc[i]));
      return m;
    }
    default: return 0;
  }
}

// How far a kernel's output may be from the double reference. The integer sums are exact; per
// group of 16 or 32 columns a kernel rounds the sum's conversion (16 bits), the product of the
// two scales, a multiply-add and (with a min) a second one, and the accumulator carries these
// roundings along the row: at most about (n_in / 16 + 4) roundings of 2^-24 of the magnitudes
// involved, |w_i x_i| and |min x_i| (the reference's weights are themselves rounded to f32 once).
// A wrong code or scale anywhere would be off by far more.
std::vector<double> bounds(const WeightMatrix& w, const Q8Activations& x) {
  std::vector<double> out(static_cast<size_t>(x.n_tok * w.n_out));
  std::vector<float> row(static_cast<size_t>(w.n_in));
  const int64_t nb = w.n_in / 32;
  for (int64_t r = 0; r < w.n_out; ++r) {
    const uint8_t* src = w.data + r * w.row_bytes;
    dequantize_row(w.type, src, row.data(), w.n_in);
    for (int64_t t = 0; t < x.n_tok; ++t) {
      double mag = 0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        const int64_t tb = t * nb + i / 32;
        const double q = x.bits == 8 ? x.q[static_cast<size_t>(t * w.n_in + i)]
                                     : x.q16[static_cast<size_t>(tb * 32 + q16_slot(i % 32))];
        const double xi = std::fabs(x.d4[static_cast<size_t>(tb * 4)] * q);
        mag += (std::fabs(row[static_cast<size_t>(i)]) + abs_min(w.type, src, i / 32)) * xi;
      }
      out[static_cast<size_t>(t * w.n_out + r)] = 2.0 * (static_cast<double>(w.n_in) / 16 + 4) * 0x1p-24 * mag + 1e-30;
    }
  }
  return out;
}

// Activations with a spread of magnitudes per block, as hidden states have.
std::vector<float> activations(int64_t n_in, int64_t n_tok, std::mt19937& rng) {
  std::vector<float> x = test::random_floats(static_cast<size_t>(n_in * n_tok), rng);
  for (size_t i = 0; i < x.size(); i += 37) x[i] *= 40.0f;
  return x;
}

struct Case {
  GgmlType type;
  int64_t n_in, n_out, n_tok;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (GgmlType type : kTypes) {
    const bool k = ggml_type_info(type).block_elems == 256;
    // One chunk and several (the kernels take at most 256 to 1024 columns at a time); rows and
    // tokens with tails.
    for (int64_t n_in : {k ? int64_t{256} : int64_t{96}, int64_t{1280}}) {
      out.push_back({type, n_in, 37, 13});
      out.push_back({type, n_in, 64, 9});
    }
  }
  return out;
}

TEST(GemmQ8, KernelsAgreeWithDoubleReference) {
  std::mt19937 rng(5);
  ThreadPool pool(1);
  for (const Case& c : cases()) {
    const std::vector<uint8_t> m = test::random_matrix(c.type, c.n_in, c.n_out, rng, /*odd_scales=*/true);
    const WeightMatrix w = make_weight_matrix(c.type, m.data(), c.n_in, c.n_out);
    std::vector<float> x = activations(c.n_in, c.n_tok, rng);
    x[3 * c.n_in + 5] = INFINITY;  // tokens 3 and 4 come out NaN in every row
    x[4 * c.n_in + c.n_in - 1] = NAN;
    for (int bits : {8, 16}) {
      SCOPED_TRACE(name(c.type) + " " + std::to_string(c.n_in) + "x" + std::to_string(c.n_out) + " tokens " +
                   std::to_string(c.n_tok) + " bits " + std::to_string(bits));
      GemmQ8Activations xq;
      gemm_q8_quantize(x.data(), c.n_in, c.n_tok, bits, xq, pool, Q8Kernel::kScalar);
      std::vector<float> want(static_cast<size_t>(c.n_tok * c.n_out));
      gemm_q8_reference(w, xq.rounded, want.data());
      const std::vector<double> bound = bounds(w, xq.rounded);
      for (Q8Kernel k : q8_kernels_supported()) {
        if (!gemm_q8_supports(c.type, bits, k)) continue;
        SCOPED_TRACE(q8_kernel_name(k));
        std::vector<float> got(want.size(), -1.0f);
        // In two calls of row ranges, as threads share them out.
        gemm_q8_rows(k, w, xq, got.data(), 0, 32);
        gemm_q8_rows(k, w, xq, got.data(), 32, c.n_out);
        for (int64_t t = 0; t < c.n_tok; ++t) {
          for (int64_t r = 0; r < c.n_out; ++r) {
            const size_t i = static_cast<size_t>(t * c.n_out + r);
            if (t == 3 || t == 4) {
              ASSERT_TRUE(std::isnan(got[i]) && std::isnan(want[i])) << "token " << t << " row " << r << ": " << got[i];
              continue;
            }
            ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want[i]), bound[i])
                << "token " << t << " row " << r << ": " << got[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

// The header's promise: every kernel does the same float operations in the same order.
TEST(GemmQ8, KernelsAreBitIdentical) {
  std::mt19937 rng(6);
  ThreadPool pool(1);
  for (const Case& c : cases()) {
    const std::vector<uint8_t> m = test::random_matrix(c.type, c.n_in, c.n_out, rng);
    const WeightMatrix w = make_weight_matrix(c.type, m.data(), c.n_in, c.n_out);
    const std::vector<float> x = activations(c.n_in, c.n_tok, rng);
    for (int bits : {8, 16}) {
      SCOPED_TRACE(name(c.type) + " bits " + std::to_string(bits));
      GemmQ8Activations xq;
      gemm_q8_quantize(x.data(), c.n_in, c.n_tok, bits, xq, pool, Q8Kernel::kScalar);
      std::vector<float> want(static_cast<size_t>(c.n_tok * c.n_out));
      gemm_q8_rows(Q8Kernel::kScalar, w, xq, want.data(), 0, c.n_out);
      for (Q8Kernel k : q8_kernels_supported()) {
        if (k == Q8Kernel::kScalar || !gemm_q8_supports(c.type, bits, k)) continue;
        std::vector<float> got(want.size());
        gemm_q8_rows(k, w, xq, got.data(), 0, c.n_out);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_float(got[i], want[i])) << q8_kernel_name(k) << " at " << i;
      }
    }
  }
}

// matmul's prefill dispatch: with kQ8 or kQ16 and more than kMatmulDecodeMaxTokens tokens it is
// the GEMM, bit-identical for 1 and 2 threads and with a copy interleaved by 8 rows.
TEST(GemmQ8, MatmulPrefillDispatch) {
  if (q8_best_kernel() == Q8Kernel::kScalar) GTEST_SKIP() << "no SIMD integer kernel on this CPU";
  std::mt19937 rng(7);
  ThreadPool one(1), two(2);
  for (GgmlType type : kTypes) {
    const int64_t n_in = 512, n_out = 136, n_tok = 40;
    const std::vector<uint8_t> m = test::random_matrix(type, n_in, n_out, rng);
    WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
    const std::vector<float> x = activations(n_in, n_tok, rng);
    for (MatmulActivations act : {MatmulActivations::kQ8, MatmulActivations::kQ16}) {
      const int bits = act == MatmulActivations::kQ8 ? 8 : 16;
      SCOPED_TRACE(name(type) + " bits " + std::to_string(bits));
      // AVX-512 VNNI takes every type at both widths; AVX2 too, but Q8_0 at 8 bits.
      const bool vnni = q8_best_kernel() == Q8Kernel::kAvx512Vnni;
      ASSERT_EQ(gemm_q8_bits(act, w), vnni || bits == 16 || type != GgmlType::Q8_0 ? bits : 0);
      if (gemm_q8_bits(act, w) == 0) continue;
      GemmQ8Activations xq;
      gemm_q8_quantize(x.data(), n_in, n_tok, bits, xq, one);
      std::vector<float> want(static_cast<size_t>(n_tok * n_out)), got1(want.size()), got2(want.size());
      gemm_q8_rows(q8_best_kernel(), w, xq, want.data(), 0, n_out);
      matmul(w, x.data(), n_tok, got1.data(), one, act);
      matmul(w, x.data(), n_tok, got2.data(), two, act);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_TRUE(same_float(got1[i], want[i])) << "1 thread, at " << i;
        ASSERT_TRUE(same_float(got2[i], want[i])) << "2 threads, at " << i;
      }
      if (rows8_supported(w)) {
        // Only the copy is read: a model releases the file's pages of a copied matrix, and reading
        // them again would bring them back (twice the weights in memory). The GGUF rows here are
        // another matrix's, so reading them would change the results.
        const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
        const std::vector<uint8_t> other = test::random_matrix(type, n_in, n_out, rng);
        WeightMatrix copy = w;
        copy.rows8 = rows8.data();
        copy.data = other.data();
        std::vector<float> got8(want.size());
        matmul(copy, x.data(), n_tok, got8.data(), two, act);
        for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(same_float(got8[i], want[i])) << "rows8, at " << i;
      }
      // A token's outputs do not depend on the others of the batch.
      std::vector<float> alone(static_cast<size_t>(9 * n_out));
      matmul(w, x.data() + 31 * n_in, 9, alone.data(), two, act);
      for (size_t i = 0; i < alone.size(); ++i) ASSERT_TRUE(same_float(alone[i], want[31 * n_out + i])) << "at " << i;
    }
  }
}

}  // namespace
}  // namespace snapkv

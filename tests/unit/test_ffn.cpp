// The SwiGLU feed-forward (ops/ffn.h): against the exact feed-forward in double, and with 8-bit
// activations bit for bit the unfused matmul_many, silu_mul_inplace and matmul it replaces, on
// any thread count, from the GGUF rows or the interleaved copies.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/dequant.h"
#include "ops/elementwise.h"
#include "ops/ffn.h"
#include "ops/rows8.h"
#include "support/random_weights.h"
#include "util/error.h"

namespace snapkv {
namespace {

using test::random_floats;
using test::random_matrix;

struct Ffn {
  std::vector<uint8_t> gate_bytes, up_bytes, down_bytes;
  WeightMatrix gate, up, down;
  AlignedVector<uint8_t> gate8, up8, down8;

  Ffn(GgmlType type, int64_t n_embd, int64_t n_ff, std::mt19937& rng)
      : gate_bytes(random_matrix(type, n_embd, n_ff, rng)),
        up_bytes(random_matrix(type, n_embd, n_ff, rng)),
        down_bytes(random_matrix(type, n_ff, n_embd, rng)),
        gate(make_weight_matrix(type, gate_bytes.data(), n_embd, n_ff)),
        up(make_weight_matrix(type, up_bytes.data(), n_embd, n_ff)),
        down(make_weight_matrix(type, down_bytes.data(), n_ff, n_embd)) {}

  // Whether the kernels read copies with rows interleaved by 8, as the model sets them up for q8.
  void use_copies(bool on) {
    if (on && gate8.empty()) {
      gate8 = interleave_rows8(gate);
      up8 = interleave_rows8(up);
      down8 = interleave_rows8(down);
    }
    gate.rows8 = on ? gate8.data() : nullptr;
    up.rows8 = on ? up8.data() : nullptr;
    down.rows8 = on ? down8.data() : nullptr;
  }

  std::vector<float> run(const std::vector<float>& x, int64_t n_tok, ThreadPool& pool, MatmulActivations act,
                         FfnActivation fn = FfnActivation::kSilu) const {
    std::vector<float> g(static_cast<size_t>(n_tok * gate.n_out)), u(g.size()), y(x);
    gated_ffn(fn, gate, up, down, y.data(), n_tok, g.data(), u.data(), y.data(), pool, act);  // y = x in place
    return y;
  }

  std::vector<float> unfused(const std::vector<float>& x, int64_t n_tok, ThreadPool& pool, MatmulActivations act,
                             FfnActivation fn = FfnActivation::kSilu) const {
    std::vector<float> g(static_cast<size_t>(n_tok * gate.n_out)), u(g.size()), y(x.size());
    const MatmulJob jobs[] = {{&gate, g.data()}, {&up, u.data()}};
    matmul_many(jobs, x.data(), n_tok, pool, act);
    if (fn == FfnActivation::kGeluTanh) {
      gelu_tanh_mul_inplace(g.data(), u.data(), static_cast<int64_t>(g.size()));
    } else {
      silu_mul_inplace(g.data(), u.data(), static_cast<int64_t>(g.size()));
    }
    matmul(down, g.data(), n_tok, y.data(), pool, act);
    return y;
  }
};

std::vector<double> dequantized(const WeightMatrix& w) {
  std::vector<float> row(static_cast<size_t>(w.n_in));
  std::vector<double> out;
  for (int64_t r = 0; r < w.n_out; ++r) {
    dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.n_in);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// The feed-forward in double; `mag` gets each output's sum of |terms| of W_down.
std::vector<double> exact_ffn(const Ffn& f, const std::vector<float>& x, int64_t n_tok, std::vector<double>& mag) {
  const std::vector<double> wg = dequantized(f.gate), wu = dequantized(f.up), wd = dequantized(f.down);
  const int64_t e = f.gate.n_in, n_ff = f.gate.n_out;
  std::vector<double> y, h(static_cast<size_t>(n_ff));
  mag.clear();
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t j = 0; j < n_ff; ++j) {
      double g = 0, u = 0;
      for (int64_t i = 0; i < e; ++i) {
        g += wg[j * e + i] * x[t * e + i];
        u += wu[j * e + i] * x[t * e + i];
      }
      h[j] = g / (1 + std::exp(-g)) * u;
    }
    for (int64_t o = 0; o < e; ++o) {
      double s = 0, m = 0;
      for (int64_t j = 0; j < n_ff; ++j) {
        s += wd[o * n_ff + j] * h[j];
        m += std::fabs(wd[o * n_ff + j] * h[j]);
      }
      y.push_back(s);
      mag.push_back(m);
    }
  }
  return y;
}

TEST(SwigluFfn, MatchesTheExactFeedForwardAndTheUnfusedOps) {
  std::mt19937 rng(29);
  ThreadPool pool1(1), pool2(2), pool3(3);
  // 576 inputs: enough work to split; 160 hidden units: 2.5 pairs of blocks, split unevenly.
  const int64_t n_embd = 576, n_ff = 160;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::F16}) {
    Ffn f(type, n_embd, n_ff, rng);
    for (int64_t n_tok : {1, 3, 8, 9, 40}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(n_tok * n_embd), rng);
      std::vector<double> mag;
      const std::vector<double> want = exact_ffn(f, x, n_tok, mag);
      const bool q8_path = type != GgmlType::F16 && n_tok <= kMatmulDecodeMaxTokens;
      for (bool copies : {false, true}) {
        if (copies && type == GgmlType::F16) continue;
        f.use_copies(copies);
        const std::string trace = std::string(ggml_type_info(type).name) + " n_tok " + std::to_string(n_tok) +
                                  (copies ? " interleaved" : "");
        SCOPED_TRACE(trace);
        const std::vector<float> f32 = f.run(x, n_tok, pool2, MatmulActivations::kF32);
        const std::vector<float> q8 = f.run(x, n_tok, pool1, MatmulActivations::kQ8);
        const std::vector<float> q16 = f.run(x, n_tok, pool3, MatmulActivations::kQ16);
        double worst_f32 = 0, worst_q8 = 0, worst_q16 = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_LE(std::fabs(f32[i] - want[i]), 1e-5 * mag[i] + 1e-6) << "output " << i;
          ASSERT_LE(std::fabs(q8[i] - want[i]), 0.05 * mag[i] + 1e-6) << "output " << i;
          ASSERT_LE(std::fabs(q16[i] - want[i]), 5e-4 * mag[i] + 1e-6) << "output " << i;
          worst_f32 = std::max(worst_f32, std::fabs(f32[i] - want[i]) / mag[i]);
          worst_q8 = std::max(worst_q8, std::fabs(q8[i] - want[i]) / mag[i]);
          worst_q16 = std::max(worst_q16, std::fabs(q16[i] - want[i]) / mag[i]);
        }
        // The integer paths must be the ones that ran: their errors are far above f32 rounding
        // (16 bits only with the interleaved copies; without them, kQ16 runs as f32).
        if (q8_path) {
          EXPECT_GT(worst_q8, 10 * worst_f32);
          if (copies) {
            EXPECT_GT(worst_q16, 2 * worst_f32);
            EXPECT_GT(worst_q8, 20 * worst_q16);
          } else {
            EXPECT_EQ(q16, f32);
          }
        }
        for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
          for (MatmulActivations act : {MatmulActivations::kF32, MatmulActivations::kQ8, MatmulActivations::kQ16}) {
            EXPECT_EQ(f.run(x, n_tok, *pool, act), f.unfused(x, n_tok, *pool, act)) << pool->size() << " threads";
            const FfnActivation gelu = FfnActivation::kGeluTanh;
            EXPECT_EQ(f.run(x, n_tok, *pool, act, gelu), f.unfused(x, n_tok, *pool, act, gelu)) << pool->size();
          }
        }
      }
    }
  }
}

TEST(SwigluFfn, ShapesThatDoNotFitAreRejected) {
  std::mt19937 rng(31);
  ThreadPool pool(2);
  const Ffn f(GgmlType::Q4_1, 64, 96, rng);
  std::vector<float> x(64), g(96), u(96), y(64);
  for (MatmulActivations act : {MatmulActivations::kF32, MatmulActivations::kQ8, MatmulActivations::kQ16}) {
    EXPECT_THROW(gated_ffn(FfnActivation::kSilu, f.gate, f.down, f.down, x.data(), 1, g.data(), u.data(), y.data(), pool, act), Error);
    EXPECT_THROW(gated_ffn(FfnActivation::kSilu, f.gate, f.up, f.gate, x.data(), 1, g.data(), u.data(), y.data(), pool, act), Error);
    EXPECT_THROW(gated_ffn(FfnActivation::kSilu, f.gate, f.up, f.down, x.data(), -1, g.data(), u.data(), y.data(), pool, act), Error);
  }
}

}  // namespace
}  // namespace snapkv

#include "ops/ffn.h"

#include "ops/elementwise.h"
#include "ops/matvec_q8.h"
#include "ops/row_split.h"
#include "util/error.h"

namespace snapkv {
namespace {

void gated_mul(FfnActivation fn, float* gate, const float* up, int64_t n) {
  if (fn == FfnActivation::kGeluTanh) {
    gelu_tanh_mul_inplace(gate, up, n);
  } else {
    silu_mul_inplace(gate, up, n);
  }
}

void gated_q8(FfnActivation fn, const WeightMatrix& w_gate, const WeightMatrix& w_up, const WeightMatrix& w_down, const float* x,
               int64_t n_tok, float* gate, float* up, float* y, ThreadPool& pool, int bits) {
  const int64_t n_ff = w_gate.n_out;
  // The calling thread's buffers, reused from call to call; the pool's threads reach them through
  // references (a thread_local named in the lambda would be each thread's own).
  thread_local Q8Activations in_buffer, product_buffer;
  Q8Activations& in = in_buffer;
  Q8Activations& product = product_buffer;
  const Q8Kernel kernel = q8_best_kernel();
  quantize_q8(x, w_gate.n_in, n_tok, in, kernel, bits);
  q8_resize(product, n_ff, n_tok, bits);
  run_split(pool, 2 * n_ff * w_gate.n_in * n_tok, [&](int ith, int nth) {
    int64_t r0, r1;
    split_rows(n_ff, 2 * kQ8Block, ith, nth, &r0, &r1);  // whole pairs of blocks of the product
    if (r0 == r1) return;
    q8_matvec_rows(kernel, w_gate, in, gate, r0, r1);
    q8_matvec_rows(kernel, w_up, in, up, r0, r1);
    for (int64_t t = 0; t < n_tok; ++t) gated_mul(fn, gate + t * n_ff + r0, up + t * n_ff + r0, r1 - r0);
    quantize_q8_columns(gate, r0, r1, product, kernel);
  });
  const MatmulJob down[] = {{&w_down, y}};
  matvec_q8_many(down, product, pool);
}

}  // namespace

void gated_ffn(FfnActivation fn, const WeightMatrix& w_gate, const WeightMatrix& w_up, const WeightMatrix& w_down,
               const float* x, int64_t n_tok, float* gate, float* up, float* y, ThreadPool& pool,
               MatmulActivations act) {
  if (w_up.n_in != w_gate.n_in || w_up.n_out != w_gate.n_out || w_down.n_in != w_gate.n_out ||
      w_down.n_out != w_gate.n_in) {
    fail(ErrorKind::kInvalidArgument, "gated_ffn: gate {} x {}, up {} x {} and down {} x {} do not fit", w_gate.n_out,
         w_gate.n_in, w_up.n_out, w_up.n_in, w_down.n_out, w_down.n_in);
  }
  const int bits = matmul_activation_bits(act, n_tok, w_gate);
  if (n_tok > 0 && bits != 0 && matmul_activation_bits(act, n_tok, w_up) == bits &&
      matmul_activation_bits(act, n_tok, w_down) == bits) {
    return gated_q8(fn, w_gate, w_up, w_down, x, n_tok, gate, up, y, pool, bits);
  }
  const MatmulJob gate_up[] = {{&w_gate, gate}, {&w_up, up}};
  matmul_many(gate_up, x, n_tok, pool, act);
  const int64_t n_ff = w_gate.n_out;
  over_tokens(pool, n_tok, [&](int64_t t0, int64_t t1) {
    gated_mul(fn, gate + t0 * n_ff, up + t0 * n_ff, (t1 - t0) * n_ff);
  });
  matmul(w_down, gate, n_tok, y, pool, act);
}

}  // namespace snapkv

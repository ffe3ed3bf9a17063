#pragma once
// The gated feed-forward of a decoder layer: SwiGLU (llama) or GeGLU (gemma).
#include <cstdint>

#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace snapkv {

enum class FfnActivation { kSilu, kGeluTanh };

// y = W_down (act(W_gate x) * (W_up x)) for n_tok tokens:
//   x: [n_tok][n_embd], the input of W_gate and W_up (n_embd = their n_in = W_down's n_out)
//   gate, up: [n_tok][n_ff] scratch (n_ff = W_gate's and W_up's n_out = W_down's n_in); gate
//   ends up holding the product act(gate) * up
//   y: [n_tok][n_embd]; may be x
// The same results as matmul_many(gate, up), silu_mul_inplace (or gelu_tanh_mul_inplace) and
// matmul(down) with `act`. Where
// all three round to the same bits (matmul_activation_bits), each thread also multiplies and
// rounds its own rows of gate and up in the job that computes them, so the calling thread
// neither reads the other threads' floats (cache lines that would cross between cores) nor runs
// that work alone while the others wait.
// Throws Error(kInvalidArgument) when the shapes do not fit, and as matmul does.
void gated_ffn(FfnActivation fn, const WeightMatrix& w_gate, const WeightMatrix& w_up, const WeightMatrix& w_down,
               const float* x, int64_t n_tok, float* gate, float* up, float* y, ThreadPool& pool,
               MatmulActivations act);

}  // namespace snapkv

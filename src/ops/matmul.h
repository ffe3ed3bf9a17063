#pragma once
// Matrix multiplication of f32 activations by a weight matrix kept in its GGUF storage type.
//
// Weights are dequantized on the fly, block by block, and never copied to an f32 matrix: decode
// (few tokens) streams each weight row once and fuses dequantization with the dot products;
// prefill (many tokens) dequantizes a small tile of rows into a per-thread L1-resident buffer and
// reuses it across all tokens with a register-blocked micro-kernel. Activations and accumulation
// are f32. SIMD code is compiled for several instruction sets (AVX-512, AVX2, SSE4, portable
// scalar) and the best one the CPU supports is chosen at run time.
#include <cstddef>
#include <cstdint>
#include <span>

#include "io/ggml_type.h"
#include "snapkv/types.h"
#include "util/thread_pool.h"

namespace snapkv {

// A view of a weight matrix as stored in a GGUF tensor with ne[0] = n_in, ne[1] = n_out:
// n_out rows of n_in elements, row r starting at data + r * row_bytes. n_in must be a multiple
// of the type's block size; row_bytes is normally ggml_row_bytes(type, n_in).
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;  // [n_out][row_bytes]
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  // Optional: the same rows interleaved by 8 (rows8.h). When it is set, the integer-activation
  // decode kernels, prefill and get_row read it instead of data (so that the pages of data can be
  // left out of memory); the other kernels read data, which must stay valid.
  const uint8_t* rows8 = nullptr;
};

// A WeightMatrix over densely packed rows (row_bytes = ggml_row_bytes(type, n_in)). Throws
// Error(kUnsupported) for a type the kernels do not handle and Error(kInvalidArgument) when n_in
// is not a positive multiple of the block size or n_out is not positive.
WeightMatrix make_weight_matrix(GgmlType type, const void* data, int64_t n_in, int64_t n_out);

// Up to this many tokens matmul takes its decode path: one pass over each weight row for each
// kMatmulPassTokens tokens (the f32, Q8 and Q16 decode kernels all take 4 tokens per pass), so a
// call of 2 to 4 tokens reads the weights once, as a call of 1 does.
inline constexpr int64_t kMatmulDecodeMaxTokens = 8;
inline constexpr int64_t kMatmulPassTokens = 4;

// MatmulActivations (snapkv/types.h) applies to decode calls (n_tok <= kMatmulDecodeMaxTokens)
// of the types matvec_q8.h handles (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K), where kQ16, and kQ8 for
// the K-quants, need matrices with a copy interleaved by 8 rows (rows8.h); and to prefill calls,
// which multiply the types of gemm_q8.h by the activations rounded to the same width with an
// integer GEMM (gemm_q8_bits says when; the other matrices stay f32).

// The bits a call of n_tok tokens with these activations rounds them to for this matrix, 8 or 16,
// or 0 where it multiplies in f32 (what the paragraph above says).
int matmul_activation_bits(MatmulActivations act, int64_t n_tok, const WeightMatrix& w);

// y[t][o] = sum_i x[t][i] * W[o][i] for t < n_tok, o < n_out, i.e. Y = X W^T.
//   x: [n_tok][n_in] f32, row-major, any alignment
//   y: [n_tok][n_out] f32, row-major, any alignment; overwritten; must not overlap x
// The output rows (n_out) are split among the pool's threads. Each output is a sum of f32
// products in an order that depends only on the SIMD target and on whether n_tok <= 8 (decode
// path) or not (prefill path): results are bit-identical for any thread count and alignment,
// and a token's outputs do not depend on the other tokens of a prefill batch.
// Prefill keeps scratch buffers between calls: per pool thread about 24 x (128 + 256) floats, and
// on the calling thread the activations of up to 256 tokens repacked (n_in x 256 floats).
// Throws Error as make_weight_matrix does for a bad matrix, and Error(kInvalidArgument) for
// n_tok < 0 or a row_bytes too small for n_in. n_tok == 0 does nothing.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool,
            MatmulActivations act = MatmulActivations::kF32);

// One product of matmul_many: y = X W^T, laid out as in matmul.
struct MatmulJob {
  const WeightMatrix* w;
  float* y;
};

// matmul of the same activations x by several matrices (Q, K and V; gate and up), with the same
// results as one matmul call per job. The matrices must share n_in. For decode (n_tok <= 8) the
// pool runs them as one job, each thread taking its share of the rows of every matrix: matrices
// too small to split on their own are split too, and the threads meet once instead of once per
// matrix. Throws as matmul does, and Error(kInvalidArgument) when n_in differs.
void matmul_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool,
                 MatmulActivations act = MatmulActivations::kF32);

// Scalar reference of matmul, the test oracle: each weight row is dequantized with
// dequantize_row and dotted with each activation row in double precision, then rounded to f32.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tok, float* y);

// Dequantizes row `row` (0 <= row < n_out) of w into dst[0..n_in): the embedding lookup.
// Bit-identical to dequantize_row on the same row. Throws Error(kOutOfRange) for a bad row.
void get_row(const WeightMatrix& w, int64_t row, float* dst);

// Name of the instruction set the SIMD kernels dispatch to on this CPU (e.g. "AVX2"), for logs
// and benchmark reports.
const char* matmul_simd_target();

}  // namespace snapkv

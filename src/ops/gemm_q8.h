#pragma once
// Prefill GEMM with the activations rounded to 8 or 16 bits: the path of matmul for more than
// kMatmulDecodeMaxTokens tokens under MatmulActivations::kQ8 / kQ16, for Q4_0, Q4_1, Q8_0, Q4_K,
// Q5_K and Q6_K weights.
//
// Why: prefill is compute-bound, and the f32 kernel already runs at the FMA peak. An integer dot
// product instruction does 4 (8-bit, vpdpbusd) or 2 (16-bit, vpdpwssd) multiply-adds per 32-bit
// lane where an FMA does one, so with the same register blocking the products cost a quarter or
// half as many instructions; what is added is one conversion and two float operations per
// (row, token, block of 32), to apply the scales.
//
// Arithmetic: the activations of each token are rounded block by block exactly as decode rounds
// them (quantize_q8: d = max|x| / 127 or / 32767, q = round(x / d)). A weight block is written as
// scale * c + min with integer codes c (Q4_0: c - 8 and no min; Q4_1: c, m; Q8_0: c; Q4_K and
// Q5_K sub-block of 32: c, scale d * sc, min -dmin * mn; Q6_K: c - 32, and a scale d * sc per 16
// weights). Each output is then, over the groups of its row in order,
//   y = fma(float(sum c * q), scale * d_x, y)  and, with a min,  y = fma(min, d_x * sum q, y)
// where the integer sums are exact. Every kernel does these float operations in this order, so
// all kernels, thread counts and token batchings give bit-identical results.
#include <cstdint>
#include <span>
#include <vector>

#include "ops/matmul.h"
#include "ops/matvec_q8.h"

namespace snapkv {

// Whether the prefill GEMM handles this weight type with `bits`-bit activations and kernel k.
// The AVX2 8-bit kernel (vpmaddubsw, whose 16-bit pair sums saturate) leaves Q8_0 out: its codes
// reach 128 in magnitude, the shifted activations 255.
bool gemm_q8_supports(GgmlType type, int bits, Q8Kernel k = q8_best_kernel());

// The activation bits a prefill call (n_tok > kMatmulDecodeMaxTokens) with these activations
// rounds them to for w: 8 for kQ8, 16 for kQ16, 0 (f32 path) for kF32 or where the best kernel of
// this CPU does not handle w (gemm_q8_supports) or is slower than f32 (the scalar one).
int gemm_q8_bits(MatmulActivations act, const WeightMatrix& w);

// Tokens per panel of GemmQ8Activations; the SIMD kernels take 6 (AVX-512) or 2 (AVX2) tokens a
// pass, always within one panel.
constexpr int64_t kGemmPanel = 6;

// Activations rounded for the GEMM: quantize_q8's codes, scales and sums (what the scalar kernel
// and the reference read), and the same again in the order the SIMD kernels read them. A pass over
// a few tokens then reads one contiguous stream, where rows of tokens n_in codes apart would be
// one stream per token, all in the same L1 sets at the power-of-two widths of real models.
// Tokens go in panels of kGemmPanel, the last one padded with zeros; columns in steps of 4 bytes:
// with 8 bits 4 codes plus 128 (vpdpbusd multiplies unsigned bytes by signed ones, and the weight
// codes are the signed side, as Q8_0's reach -128; the 128 * sum of the weight codes this adds is
// taken off per group), with 16 bits 2 codes in q16 order. Token j of panel p, step s:
// codes[((p * steps + s) * kGemmPanel + j) * 4], steps = n_in * bits / 32; per block b of 32
// columns, d[(p * n_in / 32 + b) * kGemmPanel + j] is its scale and dsum[...] d * the sum of its
// codes.
struct GemmQ8Activations {
  Q8Activations rounded;
  std::vector<uint8_t> codes;
  std::vector<float> d, dsum;
};

// Rounds x ([n_tok][n_in] f32) to `bits` bits into out (reusing its storage), with kernel k's
// rounding (quantize_q8); the pool's threads each round a share of the columns. Throws as
// quantize_q8 does.
void gemm_q8_quantize(const float* x, int64_t n_in, int64_t n_tok, int bits, GemmQ8Activations& out, ThreadPool& pool,
                      Q8Kernel k = q8_best_kernel());

// y = X W^T for rows [r0, r1) of w and every token of x (y is [n_tok][w.n_out]), with kernel k
// (one this CPU runs). gemm_q8_supports(w.type, bits, k) must hold and w.n_in must equal n_in.
// Reads w.rows8 where it is set.
void gemm_q8_rows(Q8Kernel k, const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1);

// The test oracle: each row dequantized with dequantize_row (dequant.h) and dotted in double with
// the rounded activations d * q of each token, then rounded to f32. Reads w.data.
void gemm_q8_reference(const WeightMatrix& w, const Q8Activations& x, float* y);

// matmul_many for n_tok > kMatmulDecodeMaxTokens with the activations rounded to `bits` bits;
// every job must satisfy gemm_q8_supports with the best kernel (checked by the caller,
// matmul.cpp). Rounds x with the pool's threads into a buffer the calling thread keeps between
// calls (4-6 bytes per activation), then hands out tiles of 64 rows of every job as the f32
// prefill does; each thread unpacks its weights on its stack (about 40 KiB) and keeps running sums
// of 128 bytes per token.
void gemm_q8_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, int bits);

}  // namespace snapkv

#pragma once
// Decode matvec with the activations rounded to 8 bits: the path of matmul behind
// MatmulActivations::kQ8 (matmul.h), for Q4_0, Q4_1 and Q8_0 weights, and for Q4_K, Q5_K and Q6_K
// weights interleaved by 8 rows (rows8.h; their kernels are matvec_qk-inl.h, their reference
// matvec_qk_block.h: a K-quant sub-block of 32 weights, or two of Q6_K's 16, meets one block of
// activations, and its scale and min are applied per sub-block).
//
// Each block of 32 activations is scaled to int8 as llama.cpp's Q8 types are (d = max|x| / 127,
// q = round(x / d)); a weight block times an activation block is then one integer dot product
// (AVX-512 VNNI vpdpbusd, or AVX2 vpmaddubsw + vpmaddwd) and one float multiply-add by the two
// scales. Where the float dequantize-and-dot is limited by arithmetic rather than by memory (as
// on CPUs that run AVX-512 as two 256-bit halves), this does the same rows in much less time.
// The price is accuracy: the result is the weights times the rounded activations, each off
// by up to d / 2 = max|x| / 254 of its block, where the f32 path agrees with the double reference
// to rounding. The offset term of Q4_0 and Q4_1 (min times the sum of the activations) uses the
// sum of the rounded activations too: with the unrounded sum, the error would be that of the
// codes (0..15) rather than of the weights (centred on 0), about twice as large (on random
// blocks with min = -8 d). Matrices with a copy interleaved by 8 rows (rows8.h, which the
// model makes in this mode) are read from it, 8 rows at a time.
//
// The same path rounds to 16 bits instead (MatmulActivations::kQ16, d = max|x| / 32767, int16
// codes, vpdpwssd or vpmaddwd, or with VNNI for the K-quants and Q8_0 split into high and low
// bytes for 8-bit dot products) for interleaved matrices: twice the integer instructions of 8 bits,
// still well under the float kernel's time, with an error 258 times smaller (max|x| /
// 65534 per activation; the dot product of a 576-wide Q4_1 row 1.8e-5 of the largest result,
// against 5.8e-3 with 8 bits).
#include <cstdint>
#include <span>
#include <vector>

#include "ops/matmul.h"

namespace snapkv {

inline constexpr int64_t kQ8Block = 32;

// n_tok rows of n_in activations (n_in a multiple of 32), rounded to 8 or 16 bits block by block.
// d4 and sum4 repeat each block's value four times: the SIMD kernels load two blocks' scales as
// one 8-lane vector, matching the 8 int32 lanes of two blocks' dot products; a quarter of the
// sum in each lane adds up to the sum.
struct Q8Activations {
  int64_t n_in = 0;
  int64_t n_tok = 0;
  int bits = 8;              // 8: q and q_pairs hold the codes; 16: q16 does
  std::vector<int8_t> q;     // [n_tok][n_in]: x ≈ d * q within each block of 32
  // q again, each pair of blocks (A, B) as A[0..16) B[0..16) A[16..32) B[16..32): the order of the
  // low and high nibbles of two Q4 blocks' codes. [n_tok][n_in / 64][64]; an odd last block is
  // left out.
  std::vector<int8_t> q_pairs;
  // The 16-bit codes, [n_tok][n_in], each 4 in the order 0, 2, 1, 3: the 32-bit lanes of the
  // kernels hold 2 weights of a row, and the 4 weights that one row keeps in 4 bytes of an
  // interleaved matrix's chunk pair up as (0, 2) and (1, 3) when those bytes are read as two
  // 16-bit halves (the low nibbles of bytes 0 and 2, then of bytes 1 and 3, and so on).
  std::vector<int16_t> q16;
  std::vector<float> d4;     // [n_tok][n_in / 32][4]: the block's scale d
  std::vector<float> sum4;   // [n_tok][n_in / 32][4]: a quarter of d * (sum of the block's q)
};

// Where activation i of a block (or row) is in q16: bits 0 and 1 of i swapped.
constexpr int64_t q16_slot(int64_t i) { return (i & ~int64_t{3}) | ((i & 1) << 1) | ((i >> 1) & 1); }

// The kernels; each gives the same results up to float rounding.
enum class Q8Kernel { kScalar, kAvx2, kAvx512Vnni };
const char* q8_kernel_name(Q8Kernel k);
// The kernels this CPU runs, slowest first (for the tests), and the fastest, which
// matvec_q8_many uses.
std::vector<Q8Kernel> q8_kernels_supported();
Q8Kernel q8_best_kernel();

// Rounds x ([n_tok][n_in] f32) to `bits` (8 or 16) bits into out, reusing its storage; with any
// kernel but kScalar (one this CPU runs) in AVX2, with the same results. A block with a value
// that is not finite gets a NaN scale and all-zero codes, so its products come out NaN. Throws
// Error(kInvalidArgument) when n_in is not a positive multiple of 32, n_tok is negative or bits
// is neither 8 nor 16.
void quantize_q8(const float* x, int64_t n_in, int64_t n_tok, Q8Activations& out,
                 Q8Kernel kernel = q8_best_kernel(), int bits = 8);

// quantize_q8 in two steps, so that threads can round their own columns: q8_resize sizes out for
// [n_tok][n_in] (throws as quantize_q8 does), then each quantize_q8_columns call rounds columns
// [i0, i1) of every token of x ([n_tok][out.n_in]) as quantize_q8 would. The columns must start
// at a multiple of 64 (a pair of blocks) and end at one or at out.n_in; Error(kInvalidArgument)
// otherwise.
void q8_resize(Q8Activations& out, int64_t n_in, int64_t n_tok, int bits = 8);
void quantize_q8_columns(const float* x, int64_t i0, int64_t i1, Q8Activations& out,
                         Q8Kernel kernel = q8_best_kernel());

// Whether the 8-bit path handles this weight type (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K).
bool q8_supports(GgmlType type);

// y[t][r] = dot(W[r], x[t]) for rows [r0, r1) and every token, with kernel k (one this CPU runs);
// y is [x.n_tok][w.n_out]. w.type must satisfy q8_supports and w.n_in must equal x.n_in. The
// SIMD kernels read w.rows8 where it is set (then r0 and r1 must be multiples of 8), the scalar
// kernel always reads w.data. 16-bit activations, and the K-quants, have SIMD kernels for
// interleaved matrices only: without w.rows8 they take the scalar one.
void q8_matvec_rows(Q8Kernel k, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0,
                    int64_t r1);

// The test oracle: the same arithmetic as the kernels (integer dot products of the stored weight
// codes and the rounded activations, scaled, plus min times sum4 * 4; for the K-quants as
// matvec_qk_block.h says) in double, rounded to f32, from w.data (never w.rows8).
void q8_matvec_reference(const WeightMatrix& w, const Q8Activations& x, float* y);

// matmul_many with the activations rounded to `bits` bits, for n_tok <= 8 and weight types that
// q8_supports (checked by the caller, matmul.cpp): rounds x once on the calling thread, then splits
// every job's rows among the pool's threads as the f32 decode path does.
void matvec_q8_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, int bits = 8);
// The same on activations already rounded (x.n_in must be every job's n_in).
void matvec_q8_many(std::span<const MatmulJob> jobs, const Q8Activations& x, ThreadPool& pool);

}  // namespace snapkv

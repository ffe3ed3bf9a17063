#pragma once
// A copy of a weight matrix with its rows interleaved in groups of 8, block by block, for the
// decode kernels with 8- or 16-bit activations (matvec_q8.h): Q4_0, Q4_1, Q8_0 and
// the K-quants Q4_K, Q5_K, Q6_K.
//
// In the GGUF layout a kernel finishes a row before the next; each block costs it scale
// conversions, broadcasts and a horizontal sum, about half of its vector instructions (enough
// that a kernel can be limited by them rather than by memory). Interleaved, one 256-bit load
// holds 4 bytes of each of 8 rows: a dot-product instruction with 4 broadcast activation bytes
// adds to 8 rows at once, the 8 rows' scales are one 16-byte load, and the 8 lanes of the sums
// are the 8 rows' results.
//
// Group g of rows 8g .. 8g + 7, block b (nb blocks per row; a K-quant's block is its super-block
// of 256) starts at (g * nb + b) * 8 * B, B the type's block bytes, and holds a permutation of the
// 8 rows' block bytes:
//   - first the block's f16 fields, each for the 8 rows (row 0 first, 16 bytes per field): d;
//     for Q4_1 then m; for Q4_K and Q5_K then dmin; Q6_K's one f16, d, is the last 2 bytes of its
//     GGUF block;
//   - then the block's other bytes, in their GGUF order, in chunks of 32: chunk k is bytes
//     4k .. 4k + 3 of each row's other bytes (row 0 first). For Q4_0, Q4_1 and Q8_0 these are the
//     codes; for Q4_K the 12 packed 6-bit scale and min bytes (3 chunks: lane r of chunk c holds
//     bytes 4c .. 4c + 3 of row r's, so 8 rows unpack at once) then the 128 code bytes (32
//     chunks); for Q5_K the scales, the 32 bytes of fifth bits (8 chunks), the 128 code bytes;
//     for Q6_K the 128 bytes of low nibbles (32 chunks), the 64 of high bit pairs (16), the 16
//     int8 scales (4).
// Same size as the GGUF rows.
#include <cstdint>

#include "ops/matmul.h"
#include "util/aligned_vector.h"

namespace snapkv {

// Whether w can be interleaved: Q4_0, Q4_1, Q8_0, Q4_K, Q5_K or Q6_K with densely packed rows,
// n_out a multiple of 8.
bool rows8_supported(const WeightMatrix& w);

// Whether a model that decodes with these activations makes interleaved copies of its matrices:
// with 8- or 16-bit activations on a CPU that runs the SIMD q8 kernels (the scalar one reads the
// GGUF rows).
bool rows8_wanted(MatmulActivations decode_activations);

// The interleaved copy of w's rows, into out (w.n_out * w.row_bytes bytes) or a new buffer
// (rows8_supported(w) must hold; Error(kInvalidArgument) if not).
void interleave_rows8(const WeightMatrix& w, uint8_t* out);
AlignedVector<uint8_t> interleave_rows8(const WeightMatrix& w);

// Blocks [b0, b1) (in the type's blocks: 32 elements, 256 for the K-quants) of row `row` of
// w.rows8 in the GGUF layout, into dst ((b1 - b0) x the block bytes, at most kRows8MaxBlockBytes
// each): what prefill and the embedding lookup read of an interleaved matrix. Unchecked.
inline constexpr int64_t kRows8MaxBlockBytes = 210;  // Q6_K's
void gather_row8(const WeightMatrix& w, int64_t row, int64_t b0, int64_t b1, uint8_t* dst);

// The same for the 8 rows 8g .. 8g + 7 at once, one after another in dst (8 x (b1 - b0) x the
// block bytes): what the prefill GEMM reads, a group at a time. Unchecked.
void gather_rows8(const WeightMatrix& w, int64_t g, int64_t b0, int64_t b1, uint8_t* dst);

// Row `row` of w in the GGUF layout: in w.data, or when w.rows8 is set gathered from it into
// `scratch` (w.row_bytes).
const uint8_t* gguf_row(const WeightMatrix& w, int64_t row, uint8_t* scratch);

}  // namespace snapkv

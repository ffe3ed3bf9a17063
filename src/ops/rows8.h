#pragma once
// A copy of a Q4_0, Q4_1 or Q8_0 weight matrix with its rows interleaved in groups of 8, block by
// block, for the decode kernels with 8- or 16-bit activations (matvec_q8.h).
//
// In the GGUF layout a kernel finishes a row before the next; each pair of blocks costs it two
// scale conversions, two broadcasts and a horizontal sum, about half of its vector instructions
// (enough that a kernel can be limited by them rather than by memory). Interleaved, one 256-bit
// load holds 4 code bytes of each of 8 rows: a dot-product instruction with 4 broadcast
// activation bytes adds to 8 rows at once, the 8 rows' scales are one 16-byte load, and the 8
// lanes of the sums are the 8 rows' results.
//
// Group g of rows 8g .. 8g + 7, block b (nb blocks per row) starts at (g * nb + b) * 8 * B, B the
// type's block bytes (18, 20, 34), and holds the 8 rows' f16 scales d, for Q4_1 then their f16
// mins m, then the code bytes in chunks of 32: chunk k is bytes 4k .. 4k + 3 of each row's codes
// (row 0 first). Same size as the GGUF rows.
#include <cstdint>

#include "ops/matmul.h"
#include "util/aligned_vector.h"

namespace snapkv {

// Whether w can be interleaved: Q4_0, Q4_1 or Q8_0 with densely packed rows, n_out a multiple of 8.
bool rows8_supported(const WeightMatrix& w);

// Whether a model that decodes with these activations makes interleaved copies of its matrices:
// with 8- or 16-bit activations on a CPU that runs the SIMD q8 kernels (the scalar one reads the
// GGUF rows).
bool rows8_wanted(MatmulActivations decode_activations);

// The interleaved copy of w's rows, into out (w.n_out * w.row_bytes bytes) or a new buffer
// (rows8_supported(w) must hold; Error(kInvalidArgument) if not).
void interleave_rows8(const WeightMatrix& w, uint8_t* out);
AlignedVector<uint8_t> interleave_rows8(const WeightMatrix& w);

// Blocks [b0, b1) of row `row` of w.rows8 in the GGUF layout, into dst ((b1 - b0) x the block
// bytes, at most kRows8MaxBlockBytes each): what prefill and the embedding lookup read of an
// interleaved matrix. Unchecked.
inline constexpr int64_t kRows8MaxBlockBytes = 34;  // Q8_0's
void gather_row8(const WeightMatrix& w, int64_t row, int64_t b0, int64_t b1, uint8_t* dst);

// Row `row` of w in the GGUF layout: in w.data, or when w.rows8 is set gathered from it into
// `scratch` (w.row_bytes).
const uint8_t* gguf_row(const WeightMatrix& w, int64_t row, uint8_t* scratch);

}  // namespace snapkv

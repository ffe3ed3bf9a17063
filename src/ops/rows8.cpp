#include "ops/rows8.h"

#include <cstring>

#include "ops/matvec_q8.h"
#include "ops/matvec_q8_block.h"
#include "util/error.h"

namespace snapkv {

bool rows8_supported(const WeightMatrix& w) {
  const bool type = w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q8_0;
  return type && w.n_out % 8 == 0 && w.n_in % 32 == 0 &&
         w.row_bytes == static_cast<size_t>(w.n_in / 32 * q8_block::bytes(w.type));
}

bool rows8_wanted(MatmulActivations decode_activations) {
  return decode_activations != MatmulActivations::kF32 && q8_best_kernel() != Q8Kernel::kScalar;
}

namespace {

// Where a block's bytes go in a group of 8 rows.
struct Layout {
  explicit Layout(const WeightMatrix& w)
      : block(q8_block::bytes(w.type)), n_blocks(w.n_in / 32), head(q8_block::codes_at(w.type)),
        n_chunks((block - head) / 4) {}
  int64_t block;     // bytes of a block
  int64_t n_blocks;  // per row
  int64_t head;      // its scale (and min) bytes
  int64_t n_chunks;  // its code bytes / 4

  size_t group_block(int64_t g, int64_t b) const { return static_cast<size_t>((g * n_blocks + b) * 8 * block); }

  // Calls f(offset in row r's block, offset in the group's block, bytes) for each piece of the
  // block: its scale, its min (Q4_1), then its codes 4 bytes at a time.
  template <class F>
  void for_each_piece(int64_t r, F f) const {
    f(0, 2 * r, 2);
    if (head == 4) f(2, 16 + 2 * r, 2);
    for (int64_t k = 0; k < n_chunks; ++k) f(head + 4 * k, 8 * head + 32 * k + 4 * r, 4);
  }
};

}  // namespace

void interleave_rows8(const WeightMatrix& w, uint8_t* out) {
  if (!rows8_supported(w)) {
    fail(ErrorKind::kInvalidArgument, "interleave_rows8: a {} matrix of {} x {} cannot be interleaved by 8 rows",
         ggml_type_info(w.type).name, w.n_out, w.n_in);
  }
  const Layout l(w);
  for (int64_t g = 0; g < w.n_out / 8; ++g) {
    for (int64_t b = 0; b < l.n_blocks; ++b) {
      uint8_t* o = out + l.group_block(g, b);
      for (int64_t r = 0; r < 8; ++r) {
        const uint8_t* blk = w.data + static_cast<size_t>(g * 8 + r) * w.row_bytes + b * l.block;
        l.for_each_piece(r, [&](int64_t in_row, int64_t in_group, size_t n) {
          std::memcpy(o + in_group, blk + in_row, n);
        });
      }
    }
  }
}

AlignedVector<uint8_t> interleave_rows8(const WeightMatrix& w) {
  AlignedVector<uint8_t> out(static_cast<size_t>(w.n_out) * w.row_bytes);
  interleave_rows8(w, out.data());
  return out;
}

void gather_row8(const WeightMatrix& w, int64_t row, int64_t b0, int64_t b1, uint8_t* dst) {
  const Layout l(w);
  const int64_t r = row % 8;
  for (int64_t b = b0; b < b1; ++b, dst += l.block) {
    const uint8_t* in = w.rows8 + l.group_block(row / 8, b);
    l.for_each_piece(r, [&](int64_t in_row, int64_t in_group, size_t n) {
      std::memcpy(dst + in_row, in + in_group, n);
    });
  }
}

const uint8_t* gguf_row(const WeightMatrix& w, int64_t row, uint8_t* scratch) {
  if (!w.rows8) return w.data + static_cast<size_t>(row) * w.row_bytes;
  gather_row8(w, row, 0, w.n_in / 32, scratch);
  return scratch;
}

}  // namespace snapkv

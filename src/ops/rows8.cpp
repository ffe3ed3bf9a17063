#include "ops/rows8.h"

#include <cstring>

#include "ops/matvec_q8_block.h"
#include "util/error.h"

namespace snapkv {

bool rows8_supported(const WeightMatrix& w) {
  const bool type = w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q8_0;
  return type && w.n_out % 8 == 0 && w.n_in % 32 == 0 &&
         w.row_bytes == static_cast<size_t>(w.n_in / 32 * q8_block::bytes(w.type));
}

AlignedVector<uint8_t> interleave_rows8(const WeightMatrix& w) {
  if (!rows8_supported(w)) {
    fail(ErrorKind::kInvalidArgument, "interleave_rows8: a {} matrix of {} x {} cannot be interleaved by 8 rows",
         ggml_type_info(w.type).name, w.n_out, w.n_in);
  }
  const int64_t bb = q8_block::bytes(w.type), nb = w.n_in / 32;
  const int64_t head = w.type == GgmlType::Q4_1 ? 4 : 2;  // scale (and min) bytes of a block
  const int64_t n_chunks = (bb - head) / 4;
  AlignedVector<uint8_t> out(static_cast<size_t>(w.n_out) * w.row_bytes);
  for (int64_t g = 0; g < w.n_out / 8; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out.data() + (g * nb + b) * 8 * bb;
      for (int64_t r = 0; r < 8; ++r) {
        const uint8_t* blk = w.data + static_cast<size_t>(g * 8 + r) * w.row_bytes + b * bb;
        std::memcpy(o + 2 * r, blk, 2);
        if (head == 4) std::memcpy(o + 16 + 2 * r, blk + 2, 2);
        for (int64_t k = 0; k < n_chunks; ++k) std::memcpy(o + 8 * head + 32 * k + 4 * r, blk + head + 4 * k, 4);
      }
    }
  }
  return out;
}

}  // namespace snapkv

// The interleaved copy of a weight matrix (rows8.h): reading it back in the GGUF layout.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ops/matmul.h"
#include "ops/rows8.h"
#include "support/random_weights.h"

namespace snapkv {
namespace {

// gather_row8 (one row), gather_rows8 (a group of 8) and gguf_row give back the GGUF bytes of
// any run of blocks of any row, for every type that can be interleaved. 768 columns: 24 blocks
// of 32, 3 super-blocks of 256; the K-quants' pieces of 4 bytes (35, 43 and 52 per super-block)
// also leave some after the last whole transpose of gather_rows8.
TEST(Rows8, GatherGivesBackTheGgufBlocks) {
  std::mt19937 rng(17);
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const GgmlTypeInfo& info = ggml_type_info(type);
    SCOPED_TRACE(info.name);
    const int64_t n_in = 768, n_out = 16, nb = n_in / info.block_elems, bb = info.block_bytes;
    const std::vector<uint8_t> m = test::random_matrix(type, n_in, n_out, rng);
    WeightMatrix w = make_weight_matrix(type, m.data(), n_in, n_out);
    const AlignedVector<uint8_t> rows8 = interleave_rows8(w);
    w.rows8 = rows8.data();
    const auto gguf = [&](int64_t r, int64_t b0) { return m.data() + r * w.row_bytes + b0 * bb; };
    for (int64_t b0 = 0; b0 < nb; ++b0) {
      for (int64_t b1 = b0 + 1; b1 <= nb; ++b1) {
        const size_t n = static_cast<size_t>((b1 - b0) * bb);
        std::vector<uint8_t> got(8 * n);
        for (int64_t r = 0; r < n_out; ++r) {
          gather_row8(w, r, b0, b1, got.data());
          ASSERT_EQ(std::memcmp(got.data(), gguf(r, b0), n), 0) << "row " << r << " blocks " << b0 << ".." << b1;
        }
        for (int64_t g = 0; g < n_out / 8; ++g) {
          gather_rows8(w, g, b0, b1, got.data());
          for (int64_t r = 0; r < 8; ++r) {
            ASSERT_EQ(std::memcmp(got.data() + r * n, gguf(8 * g + r, b0), n), 0)
                << "group " << g << " row " << r << " blocks " << b0 << ".." << b1;
          }
        }
      }
    }
    std::vector<uint8_t> scratch(w.row_bytes);
    for (int64_t r = 0; r < n_out; ++r) {
      ASSERT_EQ(std::memcmp(gguf_row(w, r, scratch.data()), gguf(r, 0), w.row_bytes), 0) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace snapkv

#include "ops/rows8.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/matvec_q8.h"
#include "util/error.h"

namespace snapkv {

bool rows8_supported(const WeightMatrix& w) {
  if (!q8_supports(w.type)) return false;  // the types with integer-activation kernels
  const GgmlTypeInfo& info = ggml_type_info(w.type);
  return w.n_out % 8 == 0 && w.n_in % info.block_elems == 0 &&
         w.row_bytes == static_cast<size_t>(w.n_in / info.block_elems) * info.block_bytes;
}

bool rows8_wanted(MatmulActivations decode_activations) {
  return decode_activations != MatmulActivations::kF32 && q8_best_kernel() != Q8Kernel::kScalar;
}

namespace {

// Where a block's bytes go in a group of 8 rows (rows8.h).
struct Layout {
  explicit Layout(const WeightMatrix& w)
      : block(ggml_type_info(w.type).block_bytes), n_blocks(w.n_in / ggml_type_info(w.type).block_elems),
        n_halves(w.type == GgmlType::Q4_1 || w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K ? 2 : 1),
        halves_at(w.type == GgmlType::Q6_K ? block - 2 : 0), rest_at(w.type == GgmlType::Q6_K ? 0 : 2 * n_halves),
        n_chunks((block - 2 * n_halves) / 4) {}
  int64_t block;      // bytes of a block
  int64_t n_blocks;   // per row
  int64_t n_halves;   // its f16 fields
  int64_t halves_at;  // where they start in the GGUF block
  int64_t rest_at;    // where its other bytes start
  int64_t n_chunks;   // its other bytes / 4

  size_t group_block(int64_t g, int64_t b) const { return static_cast<size_t>((g * n_blocks + b) * 8 * block); }
  // Where f16 field i and 4-byte chunk k sit in a row's GGUF block, and row r's in the group's.
  int64_t row_half_at(int64_t i) const { return halves_at + 2 * i; }
  int64_t row_chunk_at(int64_t k) const { return rest_at + 4 * k; }
  static int64_t half_at(int64_t i, int64_t r) { return 16 * i + 2 * r; }
  int64_t chunk_at(int64_t k, int64_t r) const { return 16 * n_halves + 32 * k + 4 * r; }
};

#if defined(__SSE2__)
// c[i] lane j goes to c[j] lane i (4-byte lanes).
inline void transpose4(__m128i c[4]) {
  const __m128i t0 = _mm_unpacklo_epi32(c[0], c[1]), t1 = _mm_unpackhi_epi32(c[0], c[1]);
  const __m128i t2 = _mm_unpacklo_epi32(c[2], c[3]), t3 = _mm_unpackhi_epi32(c[2], c[3]);
  c[0] = _mm_unpacklo_epi64(t0, t2);
  c[1] = _mm_unpackhi_epi64(t0, t2);
  c[2] = _mm_unpacklo_epi64(t1, t3);
  c[3] = _mm_unpackhi_epi64(t1, t3);
}
#endif

// Copies one block of 8 rows between their GGUF blocks (row r's r * stride bytes after row 0's)
// and the group's block: from the rows into the group's with kToGroup, the other way without.
template <bool kToGroup>
void copy_block(const Layout& l, const uint8_t* from, uint8_t* to, size_t stride) {
  const auto row_at = [&](int64_t r, int64_t in_block) { return static_cast<size_t>(r) * stride + in_block; };
  const auto copy = [&](size_t in_rows, int64_t in_group, size_t n) {
    if constexpr (kToGroup) std::memcpy(to + in_group, from + in_rows, n);
    else std::memcpy(to + in_rows, from + in_group, n);
  };
  for (int64_t i = 0; i < l.n_halves; ++i) {
    for (int64_t r = 0; r < 8; ++r) copy(row_at(r, l.row_half_at(i)), Layout::half_at(i, r), 2);
  }
  int64_t k = 0;
#if defined(__SSE2__)
  // 4 chunks of 4 rows at a time as one 4 x 4 transpose, a third of the instructions of copying
  // the pieces one by one (prefill gathers every tile of an interleaved matrix; loading
  // interleaves every matrix). Chunk k + j of row h + i: lane j of row h + i's 16 bytes, lane i
  // of the group's 16 bytes of chunk k + j.
  const auto load = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  const auto store = [](uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); };
  for (; k + 4 <= l.n_chunks; k += 4) {
    for (int64_t h = 0; h < 8; h += 4) {
      __m128i c[4];
      for (int i = 0; i < 4; ++i) {
        c[i] = load(kToGroup ? from + row_at(h + i, l.row_chunk_at(k)) : from + l.chunk_at(k + i, h));
      }
      transpose4(c);
      for (int i = 0; i < 4; ++i) store(kToGroup ? to + l.chunk_at(k + i, h) : to + row_at(h + i, l.row_chunk_at(k)), c[i]);
    }
  }
#endif
  for (; k < l.n_chunks; ++k) {
    for (int64_t r = 0; r < 8; ++r) copy(row_at(r, l.row_chunk_at(k)), l.chunk_at(k, r), 4);
  }
}

}  // namespace

void interleave_rows8(const WeightMatrix& w, uint8_t* out) {
  if (!rows8_supported(w)) {
    fail(ErrorKind::kInvalidArgument, "interleave_rows8: a {} matrix of {} x {} cannot be interleaved by 8 rows",
         ggml_type_info(w.type).name, w.n_out, w.n_in);
  }
  const Layout l(w);
  for (int64_t g = 0; g < w.n_out / 8; ++g) {
    for (int64_t b = 0; b < l.n_blocks; ++b) {
      const uint8_t* rows = w.data + static_cast<size_t>(g * 8) * w.row_bytes + b * l.block;
      copy_block<true>(l, rows, out + l.group_block(g, b), w.row_bytes);
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
    for (int64_t i = 0; i < l.n_halves; ++i) std::memcpy(dst + l.row_half_at(i), in + Layout::half_at(i, r), 2);
    for (int64_t k = 0; k < l.n_chunks; ++k) std::memcpy(dst + l.row_chunk_at(k), in + l.chunk_at(k, r), 4);
  }
}

void gather_rows8(const WeightMatrix& w, int64_t g, int64_t b0, int64_t b1, uint8_t* dst) {
  const Layout l(w);
  const size_t row_bytes = static_cast<size_t>((b1 - b0) * l.block);
  for (int64_t b = b0; b < b1; ++b) {
    copy_block<false>(l, w.rows8 + l.group_block(g, b), dst + (b - b0) * l.block, row_bytes);
  }
}

const uint8_t* gguf_row(const WeightMatrix& w, int64_t row, uint8_t* scratch) {
  if (!w.rows8) return w.data + static_cast<size_t>(row) * w.row_bytes;
  gather_row8(w, row, 0, w.n_in / ggml_type_info(w.type).block_elems, scratch);
  return scratch;
}

}  // namespace snapkv

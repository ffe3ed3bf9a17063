// The x86 kernels of gemm_q8.h. Included twice by gemm_q8_x86.cpp, each time inside a compiler
// target region and its own namespace: with SNAPKV_GEMM_VNNI 1 (AVX-512 VNNI on 512-bit vectors,
// 16 rows a vector) and 0 (AVX2, 8 rows a vector). No include guard, on purpose. Everything but
// Rows is static, and the headers it needs are included before the regions, so nothing compiled
// for one instruction set is shared with code that runs on a CPU without it.
//
// Per thread, a tile of kTileRows weight rows x up to kChunk columns is unpacked into a buffer on
// the stack (about 16 KiB of codes, L1-resident) as signed integer codes laid out for the dot
// products, with the scales, mins and (8 bits) offset corrections of each group; then every token
// of the prefill is multiplied by it, kT tokens at a time, and the tile moves on. The codes of a
// vector's rows lie 4 bytes per row side by side, so one dot-product instruction with 4
// activation bytes (or 2 16-bit activations) of a token broadcast to every lane adds 4 (2)
// products to each of the vector's rows: the lanes are rows, and a token's results are
// consecutive floats of y. The integer sums of a group (32 weights, 16 for Q6_K) start from its
// correction and go through one conversion and two float operations into float accumulators,
// which stay in registers over the chunk and go through a per-thread buffer of running sums
// between chunks (Out). The activations come in GemmQ8Activations' panel order, so a pass over kT
// tokens reads one stream.

#if SNAPKV_GEMM_VNNI
using VI = __m512i;
using VF = __m512;
static constexpr int kVecRows = 16;
static constexpr int kT = 6;  // 2 x 6 float and 2 x 6 integer accumulators of 32 registers
static inline VI LoadI(const void* p) { return _mm512_loadu_si512(p); }
static inline VI ZeroI() { return _mm512_setzero_si512(); }
static inline VI Broadcast32(int32_t v) { return _mm512_set1_epi32(v); }
static inline VF ZeroF() { return _mm512_setzero_ps(); }
static inline VF SetF(float v) { return _mm512_set1_ps(v); }
static inline VF LoadF(const float* p) { return _mm512_loadu_ps(p); }
static inline void StoreF(float* p, VF v) { _mm512_storeu_ps(p, v); }
// Through the masked form: GCC 12 warns that the plain intrinsic's undefined source register may
// be used uninitialized once its input comes from inline assembly (Dot8, Dot16).
static inline VF ToF(VI v) { return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xFFFF, v); }
static inline VF MulF(VF a, VF b) { return _mm512_mul_ps(a, b); }
static inline VF FmaF(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
// acc + per lane sum of 4 products of unsigned bytes of x by signed bytes of w. In inline assembly:
// with the intrinsic, GCC 12 copies every accumulator to another register and back around each
// instruction of the unrolled loop (twice as many instructions), where the instruction updates it
// in place.
static inline VI Dot8(VI acc, VI x, VI w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
  return acc;
}
// acc + per lane sum of 2 products of signed 16-bit halves.
static inline VI Dot16(VI acc, VI x, VI w) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
  return acc;
}
static inline void StoreRows(float* p, VF v, int n) {
  if (n == kVecRows) _mm512_storeu_ps(p, v);
  else _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
}
#else
using VI = __m256i;
using VF = __m256;
static constexpr int kVecRows = 8;
static constexpr int kT = 2;  // 2 x 2 float and 2 x 2 integer accumulators of 16 registers
static inline VI LoadI(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
static inline VI ZeroI() { return _mm256_setzero_si256(); }
static inline VI Broadcast32(int32_t v) { return _mm256_set1_epi32(v); }
static inline VF ZeroF() { return _mm256_setzero_ps(); }
static inline VF SetF(float v) { return _mm256_set1_ps(v); }
static inline VF LoadF(const float* p) { return _mm256_loadu_ps(p); }
static inline void StoreF(float* p, VF v) { _mm256_storeu_ps(p, v); }
static inline VF ToF(VI v) { return _mm256_cvtepi32_ps(v); }
static inline VF MulF(VF a, VF b) { return _mm256_mul_ps(a, b); }
static inline VF FmaF(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
#include "ops/matvec_x86_dot-inl.h"  // the decode kernels' AVX2 dot products (SNAPKV_Q8_VNNI unset)
// vpmaddubsw saturates its 16-bit pair sums: 2 * 255 * |w| stays below 2^15 for codes of at most
// 32 in magnitude, which is why gemm_q8_supports leaves Q8_0 out of this kernel.
static inline VI Dot8(VI acc, VI x, VI w) { return DotAdd(acc, x, w); }
// Dot8 of two steps, their 16-bit pair sums added before widening: one vpmaddwd and one vpaddd
// for both. Exact for the same codes: 2 * 2 * 255 * 32 < 2^15.
static inline VI Dot8x2(VI acc, VI x0, VI w0, VI x1, VI w1) { return DotAdd2(acc, x0, w0, x1, w1); }
static inline VI Dot16(VI acc, VI x, VI w) { return DotAdd16(acc, x, w); }
static inline __m256i RowMask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline void StoreRows(float* p, VF v, int n) {
  if (n == kVecRows) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, RowMask(n), v);
}
#endif

static constexpr int kVecs = 2;  // vectors of rows per tile
static constexpr int64_t kTileRows = kVecs * kVecRows;
static constexpr int64_t kCodeBytes = 16384;  // the tile's codes: half of a 32 KiB L1

// Columns per chunk: the codes of kTileRows rows in kCodeBytes, a multiple of 32.
template <int kBits>
static constexpr int64_t kChunk = kCodeBytes / (kTileRows * (kBits / 8));

// A tile of kTileRows rows x kc columns (kc <= kChunk): for vector v of rows, step s (4 columns
// with 8 bits, 2 with 16), row i of the vector: 4 bytes of codes at code + ((v * steps + s) *
// kVecRows + i) * 4, steps = kc / (columns per step). With 16 bits the 2 columns of a step are
// those of the activations' q16 order (q16_slot). Per group g (kGroup columns) of vector v:
// scale[(v * groups + g) * kVecRows + i], the same for corr (8 bits: -128 * the sum of the
// group's codes); per block of 32 columns: min.
template <int kBits>
struct Tile {
  alignas(64) int8_t code[kCodeBytes];
  alignas(64) float scale[kVecs * kChunk<kBits> / 16 * kVecRows];
  alignas(64) int32_t corr[kVecs * kChunk<kBits> / 16 * kVecRows];
  alignas(64) float min[kVecs * kChunk<kBits> / 32 * kVecRows];
};

// Block b's 32 codes as gemm_block::decode gives them, from the bytes c names (AVX2 operations,
// which both passes have).
template <GgmlType kType>
static inline __m256i Codes(const gemm_block::CodeBytes& c) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  if constexpr (kType == GgmlType::Q8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.lo));
  } else if constexpr (kType == GgmlType::Q4_0 || kType == GgmlType::Q4_1) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c.lo));
    const __m256i code = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), nibble);
    return kType == GgmlType::Q4_0 ? _mm256_sub_epi8(code, _mm256_set1_epi8(8)) : code;
  } else {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.lo));
    __m256i code = _mm256_and_si256(_mm256_srl_epi16(lo, _mm_cvtsi32_si128(c.lo_shift)), nibble);
    if constexpr (kType == GgmlType::Q4_K) return code;
    constexpr int kHighMask = kType == GgmlType::Q5_K ? 1 : 3;
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.hi));
    const __m256i high =
        _mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(c.hi_shift)), _mm256_set1_epi8(kHighMask));
    code = _mm256_or_si256(code, _mm256_slli_epi16(high, 4));  // within bytes: high <= 3
    return kType == GgmlType::Q6_K ? _mm256_sub_epi8(code, _mm256_set1_epi8(32)) : code;
  }
}

#if SNAPKV_GEMM_VNNI
// kVecRows x kVecRows 32-bit elements: r[i] holds element j of row i in lane j; afterwards r[j]
// holds element j of every row, row i in lane i. Four rounds of 16 shuffles (the zero-masked
// forms: GCC 12 warns that the plain ones' undefined source may be used).
static inline void TransposeRows(VI r[kVecRows]) {
  VI t[16];
  for (int i = 0; i < 16; i += 2) {  // lanes of 128 bits: a0 b0 a1 b1 and a2 b2 a3 b3
    t[i] = _mm512_maskz_unpacklo_epi32(0xFFFF, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32(0xFFFF, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // r[i + k], lane l: rows i .. i + 3 of element 4 l + k
    r[i] = _mm512_maskz_unpacklo_epi64(0xFF, t[i], t[i + 2]);
    r[i + 1] = _mm512_maskz_unpackhi_epi64(0xFF, t[i], t[i + 2]);
    r[i + 2] = _mm512_maskz_unpacklo_epi64(0xFF, t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_maskz_unpackhi_epi64(0xFF, t[i + 1], t[i + 3]);
  }
  for (int k = 0; k < 4; ++k) {  // gather lane l of r[k], r[4 + k], r[8 + k], r[12 + k]
    const VI u0 = _mm512_maskz_shuffle_i32x4(0xFFFF, r[k], r[4 + k], 0x88);
    const VI u1 = _mm512_maskz_shuffle_i32x4(0xFFFF, r[k], r[4 + k], 0xDD);
    const VI u2 = _mm512_maskz_shuffle_i32x4(0xFFFF, r[8 + k], r[12 + k], 0x88);
    const VI u3 = _mm512_maskz_shuffle_i32x4(0xFFFF, r[8 + k], r[12 + k], 0xDD);
    t[k] = _mm512_maskz_shuffle_i32x4(0xFFFF, u0, u2, 0x88);
    t[4 + k] = _mm512_maskz_shuffle_i32x4(0xFFFF, u1, u3, 0x88);
    t[8 + k] = _mm512_maskz_shuffle_i32x4(0xFFFF, u0, u2, 0xDD);
    t[12 + k] = _mm512_maskz_shuffle_i32x4(0xFFFF, u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}
#else
// The same for 8 x 8: three rounds of 8 shuffles.
static inline void TransposeRows(VI r[kVecRows]) {
  VI t[8];
  for (int i = 0; i < 8; i += 2) {  // lanes of 128 bits: a0 b0 a1 b1 and a2 b2 a3 b3
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // r[i + k], lane l: rows i .. i + 3 of element 4 l + k
    r[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int k = 0; k < 4; ++k) {  // lane 0 of r[k] and r[4 + k], then lane 1 of each
    t[k] = _mm256_permute2x128_si256(r[k], r[4 + k], 0x20);
    t[4 + k] = _mm256_permute2x128_si256(r[k], r[4 + k], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}
#endif

// Lane k of vpsadbw's sums of 8 bytes with 128 added, less the 128s (k a constant, as clang wants).
template <int k>
static inline int32_t EightSum(__m256i eights) {
  return static_cast<int32_t>(_mm256_extract_epi64(eights, k)) - 8 * 128;
}

// The sums of c's 32 signed codes over each group of kGroup (16: bytes 0-15 and 16-31; 32: all),
// into out: sums of 8 bytes with 128 added (vpsadbw against zero), less the 128s.
template <int kGroup>
static inline void GroupSums(__m256i c, int32_t* out) {
  const __m256i e = _mm256_sad_epu8(_mm256_xor_si256(c, _mm256_set1_epi8(-128)), _mm256_setzero_si256());
  if constexpr (kGroup == 16) {
    out[0] = EightSum<0>(e) + EightSum<1>(e);
    out[1] = EightSum<2>(e) + EightSum<3>(e);
  } else {
    out[0] = EightSum<0>(e) + EightSum<1>(e) + EightSum<2>(e) + EightSum<3>(e);
  }
}

// A row's codes of one block as the tile's steps want them, into out: with 8 bits the 32 codes,
// with 16 bits widened to 16 bits, each 4 in q16 order (the middle two swapped, q16_slot).
template <int kBits>
static inline void StepCodes(__m256i c, int8_t* out) {
  if constexpr (kBits == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), c);
  } else {
    const __m256i slots = _mm256_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15,  //
                                           0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
    const __m256i s = _mm256_shuffle_epi8(c, slots);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(s)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(s, 1)));
  }
}

// Writes the tile's codes of one vector of rows to dst in Tile's layout, from rows[i] (row i's
// steps, 4 bytes each, StepCodes): each kVecRows steps of the vector's rows are one TransposeRows;
// steps left over (8-bit steps of an odd last block, with 16 rows a vector) go one row at a time.
template <int kBits>
static void Transpose(const int8_t (*rows)[kChunk<kBits> * kBits / 8], int64_t steps, int8_t* dst) {
  int64_t s = 0;
  for (; s + kVecRows <= steps; s += kVecRows) {
    VI r[kVecRows];
    for (int i = 0; i < kVecRows; ++i) r[i] = LoadI(rows[i] + s * 4);
    TransposeRows(r);
    for (int k = 0; k < kVecRows; ++k) std::memcpy(dst + (s + k) * kVecRows * 4, &r[k], sizeof(VI));
  }
  for (; s < steps; ++s) {
    for (int i = 0; i < kVecRows; ++i) std::memcpy(dst + (s * kVecRows + i) * 4, rows[i] + s * 4, 4);
  }
}

// Unpacks rows [r, r + kTileRows) (those below r_end; zeros for the others) x blocks [b0, b1) of w.
template <GgmlType kType, int kBits>
static void Unpack(const WeightMatrix& w, int64_t r, int64_t r_end, int64_t b0, int64_t b1, Tile<kBits>& tile) {
  constexpr int kGroup = gemm_block::group(kType);
  constexpr int kGroupsPerBlock = 32 / kGroup;
  constexpr int kStepCols = kBits == 8 ? 4 : 2;
  const int64_t nb = b1 - b0;
  const int64_t steps = nb * 32 / kStepCols, groups = nb * kGroupsPerBlock;
  // With an interleaved copy, a group of 8 rows of the chunk in the GGUF layout (gather_rows8);
  // Q8_0 has the most bytes per 32 weights, 34.
  constexpr int64_t kPer = gemm_block::per_type_block(kType);
  const int64_t tb0 = b0 / kPer, tb1 = (b1 + kPer - 1) / kPer;  // the type's blocks holding [b0, b1)
  const size_t gathered_row = static_cast<size_t>(tb1 - tb0) * ggml_type_info(kType).block_bytes;
  uint8_t gathered[8 * kChunk<8> / 32 * 34];
  alignas(64) int8_t rows[kVecRows][kChunk<kBits> * kBits / 8];  // a vector's rows' steps (StepCodes)
  for (int v = 0; v < kVecs; ++v) {
    for (int i = 0; i < kVecRows; ++i) {
      const int64_t row = r + v * kVecRows + i;
      const uint8_t* src = nullptr;
      int64_t bs = b0;  // src's block index of block b0
      if (row < r_end) {
        if (w.rows8) {
          if (row % 8 == 0) gather_rows8(w, row / 8, tb0, tb1, gathered);
          src = gathered + (row % 8) * gathered_row;
          bs = b0 - tb0 * kPer;
        } else {
          src = w.data + static_cast<size_t>(row) * w.row_bytes;
        }
      }
      for (int64_t b = 0; b < nb; ++b) {
        gemm_block::Block blk;  // its scales and min; the codes go to rows[i]
        int8_t* code = rows[i] + b * 32 * kBits / 8;
        int32_t sums[kGroupsPerBlock] = {};  // of each group's codes (8 bits: for the correction)
        if (src) {
          const __m256i c = Codes<kType>(gemm_block::scales<kType>(src, bs + b, blk));
          StepCodes<kBits>(c, code);
          if constexpr (kBits == 8) GroupSums<kGroup>(c, sums);
        } else {
          std::memset(&blk, 0, sizeof(blk));
          std::memset(code, 0, 32 * kBits / 8);
        }
        for (int g = 0; g < kGroupsPerBlock; ++g) {
          const int64_t gi = (v * groups + b * kGroupsPerBlock + g) * kVecRows + i;
          tile.scale[gi] = blk.scale[g];
          if constexpr (kBits == 8) tile.corr[gi] = -128 * sums[g];
        }
        tile.min[(v * nb + b) * kVecRows + i] = blk.min;
      }
    }
    Transpose<kBits>(rows, steps, tile.code + v * steps * kVecRows * 4);
  }
}

// Where a pass's sums go. Between chunks, into the tile's running sums: token t's kTileRows floats
// at part + t * kTileRows, contiguous (rows of y lie n_out floats apart, and at a power-of-two
// n_out every token's row falls in the same few L2 sets and is evicted before the next chunk).
// After the last chunk, into y's rows [r, r + n_rows) (n_rows <= kTileRows).
struct Out {
  float* part;
  float* y;
  int64_t n_out, r;
  int n_rows;
  bool first, last;
};

// Tokens t0 .. t0 + T over the tile's columns [k0, k0 + kc): the running sums (first: zeros), then
// every group of the chunk.
template <GgmlType kType, int kBits, int T>
static void Kernel(const Tile<kBits>& tile, const GemmQ8Activations& x, int64_t t0, int64_t k0, int64_t kc,
                   const Out& out) {
  static_assert(kGemmPanel % kT == 0 && T <= kT, "a pass stays within one panel of the activations");
  constexpr int kGroup = gemm_block::group(kType);
  constexpr int kStepCols = kBits == 8 ? 4 : 2;
  constexpr int kStepsPerGroup = kGroup / kStepCols;
  const int64_t n_in = x.rounded.n_in, nb = n_in / 32;
  const int64_t steps = kc / kStepCols, groups = kc / kGroup;
  // Token t0 + t's 4 bytes of step s of the chunk at xq[(s * kGemmPanel + t) * 4]; block b's scale
  // and d * sum at xd[b * kGemmPanel + t], xs[...].
  const int64_t p = t0 / kGemmPanel, j0 = t0 % kGemmPanel;
  const uint8_t* xq = x.codes.data() + ((p * (n_in / kStepCols) + k0 / kStepCols) * kGemmPanel + j0) * 4;
  const float* xd = x.d.data() + (p * nb + k0 / 32) * kGemmPanel + j0;
  const float* xs = x.dsum.data() + (p * nb + k0 / 32) * kGemmPanel + j0;
  VF acc[T][kVecs];
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < kVecs; ++v) {
      acc[t][v] = out.first ? ZeroF() : LoadF(out.part + (t0 + t) * kTileRows + v * kVecRows);
    }
  }
  for (int64_t g = 0; g < groups; ++g) {
    VI sum[T][kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const VI init = kBits == 8 ? LoadI(tile.corr + (v * groups + g) * kVecRows) : ZeroI();
      for (int t = 0; t < T; ++t) sum[t][v] = init;
    }
    const int8_t* code = tile.code + g * kStepsPerGroup * kVecRows * 4;
    const uint8_t* xg = xq + g * kStepsPerGroup * kGemmPanel * 4;
#if !SNAPKV_GEMM_VNNI
    if constexpr (kBits == 8) {  // two steps at a time (Dot8x2)
      for (int s = 0; s < kStepsPerGroup; s += 2, code += 2 * kVecRows * 4, xg += 2 * kGemmPanel * 4) {
        VI w0[kVecs], w1[kVecs];
        for (int v = 0; v < kVecs; ++v) {
          w0[v] = LoadI(code + v * steps * kVecRows * 4);
          w1[v] = LoadI(code + v * steps * kVecRows * 4 + kVecRows * 4);
        }
        for (int t = 0; t < T; ++t) {
          int32_t four0, four1;
          std::memcpy(&four0, xg + t * 4, 4);
          std::memcpy(&four1, xg + (kGemmPanel + t) * 4, 4);
          const VI x0 = Broadcast32(four0), x1 = Broadcast32(four1);
          for (int v = 0; v < kVecs; ++v) sum[t][v] = Dot8x2(sum[t][v], x0, w0[v], x1, w1[v]);
        }
      }
    } else
#endif
    for (int s = 0; s < kStepsPerGroup; ++s, code += kVecRows * 4, xg += kGemmPanel * 4) {
      VI wv[kVecs];
      for (int v = 0; v < kVecs; ++v) wv[v] = LoadI(code + v * steps * kVecRows * 4);
      for (int t = 0; t < T; ++t) {
        int32_t four;
        std::memcpy(&four, xg + t * 4, 4);
        const VI xv = Broadcast32(four);
        for (int v = 0; v < kVecs; ++v) sum[t][v] = kBits == 8 ? Dot8(sum[t][v], xv, wv[v]) : Dot16(sum[t][v], xv, wv[v]);
      }
    }
    const int64_t b = g * kGroup / 32;  // the chunk's block of this group
    VF sc[kVecs];
    for (int v = 0; v < kVecs; ++v) sc[v] = LoadF(tile.scale + (v * groups + g) * kVecRows);
    for (int t = 0; t < T; ++t) {
      const VF d = SetF(xd[b * kGemmPanel + t]);
      for (int v = 0; v < kVecs; ++v) acc[t][v] = FmaF(ToF(sum[t][v]), MulF(sc[v], d), acc[t][v]);
    }
    if constexpr (gemm_block::has_min(kType)) {  // groups of 32: one per block
      for (int v = 0; v < kVecs; ++v) sc[v] = LoadF(tile.min + (v * groups + g) * kVecRows);
      for (int t = 0; t < T; ++t) {
        const VF s = SetF(xs[b * kGemmPanel + t]);
        for (int v = 0; v < kVecs; ++v) acc[t][v] = FmaF(sc[v], s, acc[t][v]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < kVecs; ++v) {
      if (!out.last) {
        StoreF(out.part + (t0 + t) * kTileRows + v * kVecRows, acc[t][v]);
      } else if (const int n = out.n_rows - v * kVecRows; n > 0) {
        StoreRows(out.y + (t0 + t) * out.n_out + out.r + v * kVecRows, acc[t][v], std::min(n, kVecRows));
      }
    }
  }
}

// Kernel for the last n < kT tokens from t0.
template <GgmlType kType, int kBits, int T = kT - 1>
static void KernelTail(int n, const Tile<kBits>& tile, const GemmQ8Activations& x, int64_t t0, int64_t k0, int64_t kc,
                       const Out& out) {
  if constexpr (T >= 1) {
    if (n == T) return Kernel<kType, kBits, T>(tile, x, t0, k0, kc, out);
    KernelTail<kType, kBits, T - 1>(n, tile, x, t0, k0, kc, out);
  }
}

template <GgmlType kType, int kBits>
static void RowsTyped(const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1,
                      float* part) {
  Tile<kBits> tile;
  const int64_t n_tok = x.rounded.n_tok, nb = w.n_in / 32;
  constexpr int64_t kChunkBlocks = kChunk<kBits> / 32;
  for (int64_t r = r0; r < r1; r += kTileRows) {
    const int n_rows = static_cast<int>(std::min(kTileRows, r1 - r));
    for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
      const int64_t b1 = std::min(nb, b0 + kChunkBlocks);
      Unpack<kType, kBits>(w, r, r + n_rows, b0, b1, tile);
      const int64_t k0 = b0 * 32, kc = (b1 - b0) * 32;
      const Out out{part, y, w.n_out, r, n_rows, b0 == 0, b1 == nb};
      int64_t t = 0;
      for (; t + kT <= n_tok; t += kT) Kernel<kType, kBits, kT>(tile, x, t, k0, kc, out);
      if (t < n_tok) KernelTail<kType, kBits>(static_cast<int>(n_tok - t), tile, x, t, k0, kc, out);
    }
  }
}

// part: room for the running sums of n_tok tokens x kTileRows rows.
void Rows(const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1, float* part) {
  gemm_block::with_type(w.type, [&](auto type) {
    if (x.rounded.bits == 8) {
      if constexpr (SNAPKV_GEMM_VNNI || decltype(type)::value != GgmlType::Q8_0) {
        RowsTyped<decltype(type)::value, 8>(w, x, y, r0, r1, part);
      }
    } else {
      RowsTyped<decltype(type)::value, 16>(w, x, y, r0, r1, part);
    }
  });
}

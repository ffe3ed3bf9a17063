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
// which stay in registers over the chunk and go through y between chunks.

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
static inline VF LoadRows(const float* p, int n) {
  return n == kVecRows ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
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
static inline VF ToF(VI v) { return _mm256_cvtepi32_ps(v); }
static inline VF MulF(VF a, VF b) { return _mm256_mul_ps(a, b); }
static inline VF FmaF(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
// vpmaddubsw saturates its 16-bit pair sums: 2 * 255 * |w| stays below 2^15 for codes of at most
// 32 in magnitude, which is why gemm_q8_supports leaves Q8_0 out of this kernel.
static inline VI Dot8(VI acc, VI x, VI w) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)));
}
// Dot8 of two steps, their 16-bit pair sums added before widening: one vpmaddwd and one vpaddd
// for both. Exact for the same codes: 2 * 2 * 255 * 32 < 2^15.
static inline VI Dot8x2(VI acc, VI x0, VI w0, VI x1, VI w1) {
  const VI pairs = _mm256_add_epi16(_mm256_maddubs_epi16(x0, w0), _mm256_maddubs_epi16(x1, w1));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}
static inline VI Dot16(VI acc, VI x, VI w) { return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w)); }
static inline __m256i RowMask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline VF LoadRows(const float* p, int n) {
  return n == kVecRows ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, RowMask(n));
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

// Unpacks rows [r, r + kTileRows) (those below r_end; zeros for the others) x blocks [b0, b1) of w.
template <GgmlType kType, int kBits>
static void Unpack(const WeightMatrix& w, int64_t r, int64_t r_end, int64_t b0, int64_t b1, Tile<kBits>& tile) {
  constexpr int kGroup = gemm_block::group(kType);
  constexpr int kGroupsPerBlock = 32 / kGroup;
  constexpr int kStepCols = kBits == 8 ? 4 : 2;
  const int64_t nb = b1 - b0;
  const int64_t steps = nb * 32 / kStepCols, groups = nb * kGroupsPerBlock;
  uint8_t gathered[kChunk<8> / 32 * kRows8MaxBlockBytes];
  for (int v = 0; v < kVecs; ++v) {
    for (int i = 0; i < kVecRows; ++i) {
      const int64_t row = r + v * kVecRows + i;
      const uint8_t* src = nullptr;
      int64_t bs = b0;  // src's block index of block b0
      if (row < r_end) {
        if constexpr (kType == GgmlType::Q4_0 || kType == GgmlType::Q4_1 || kType == GgmlType::Q8_0) {
          if (w.rows8) {
            gather_row8(w, row, b0, b1, gathered);
            src = gathered;
            bs = 0;
          }
        }
        if (!src) src = w.data + static_cast<size_t>(row) * w.row_bytes;
      }
      for (int64_t b = 0; b < nb; ++b) {
        gemm_block::Block blk;
        if (src) {
          gemm_block::decode<kType>(src, bs + b, blk);
        } else {
          std::memset(&blk, 0, sizeof(blk));
        }
        for (int g = 0; g < kGroupsPerBlock; ++g) {
          const int64_t gi = (v * groups + b * kGroupsPerBlock + g) * kVecRows + i;
          tile.scale[gi] = blk.scale[g];
          int32_t sum = 0;
          for (int k = 0; k < kGroup; ++k) sum += blk.code[g * kGroup + k];
          tile.corr[gi] = -128 * sum;
        }
        tile.min[(v * nb + b) * kVecRows + i] = blk.min;
        if constexpr (kBits == 8) {
          for (int s = 0; s < 8; ++s) {
            std::memcpy(tile.code + ((v * steps + b * 8 + s) * kVecRows + i) * 4, blk.code + 4 * s, 4);
          }
        } else {
          for (int s = 0; s < 16; ++s) {
            const int16_t pair[2] = {blk.code[q16_slot(2 * s)], blk.code[q16_slot(2 * s + 1)]};
            std::memcpy(tile.code + ((v * steps + b * 16 + s) * kVecRows + i) * 4, pair, 4);
          }
        }
      }
    }
  }
}

// y rows [r, r + n_rows) (n_rows <= kTileRows) of tokens t0 .. t0 + T, over the tile's columns
// [k0, k0 + kc): accumulators from y (first: from zero), then every group of the chunk.
template <GgmlType kType, int kBits, int T>
static void Kernel(const Tile<kBits>& tile, const GemmQ8Activations& x, int64_t t0, int64_t k0, int64_t kc,
                   float* y, int64_t n_out, int64_t r, int n_rows, bool first) {
  using Code = std::conditional_t<kBits == 8, uint8_t, int16_t>;
  constexpr int kGroup = gemm_block::group(kType);
  constexpr int kStepCols = kBits == 8 ? 4 : 2;
  constexpr int kStepsPerGroup = kGroup / kStepCols;
  const Q8Activations& xr = x.rounded;
  const int64_t n_in = xr.n_in, nb = n_in / 32;
  const int64_t steps = kc / kStepCols, groups = kc / kGroup;
  const Code* xq[T];
  const float* xd[T];  // d4 of the chunk's first block: one scale every 4 floats
  const float* xs[T];
  for (int t = 0; t < T; ++t) {
    if constexpr (kBits == 8) xq[t] = x.u8.data() + (t0 + t) * n_in + k0;
    else xq[t] = xr.q16.data() + (t0 + t) * n_in + k0;
    xd[t] = xr.d4.data() + ((t0 + t) * nb + k0 / 32) * 4;
    xs[t] = xr.sum4.data() + ((t0 + t) * nb + k0 / 32) * 4;
  }
  int rows[kVecs];
  for (int v = 0; v < kVecs; ++v) rows[v] = static_cast<int>(std::clamp<int64_t>(n_rows - v * kVecRows, 0, kVecRows));
  VF acc[T][kVecs];
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < kVecs; ++v) {
      acc[t][v] = first || rows[v] == 0 ? ZeroF() : LoadRows(y + (t0 + t) * n_out + r + v * kVecRows, rows[v]);
    }
  }
  for (int64_t g = 0; g < groups; ++g) {
    VI sum[T][kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const VI init = kBits == 8 ? LoadI(tile.corr + (v * groups + g) * kVecRows) : ZeroI();
      for (int t = 0; t < T; ++t) sum[t][v] = init;
    }
    const int8_t* code = tile.code + g * kStepsPerGroup * kVecRows * 4;
#if !SNAPKV_GEMM_VNNI
    if constexpr (kBits == 8) {  // two steps at a time (Dot8x2)
      for (int s = 0; s < kStepsPerGroup; s += 2, code += 2 * kVecRows * 4) {
        VI w0[kVecs], w1[kVecs];
        for (int v = 0; v < kVecs; ++v) {
          w0[v] = LoadI(code + v * steps * kVecRows * 4);
          w1[v] = LoadI(code + v * steps * kVecRows * 4 + kVecRows * 4);
        }
        for (int t = 0; t < T; ++t) {
          int32_t four0, four1;
          std::memcpy(&four0, xq[t] + g * kGroup + s * kStepCols, 4);
          std::memcpy(&four1, xq[t] + g * kGroup + (s + 1) * kStepCols, 4);
          const VI x0 = Broadcast32(four0), x1 = Broadcast32(four1);
          for (int v = 0; v < kVecs; ++v) sum[t][v] = Dot8x2(sum[t][v], x0, w0[v], x1, w1[v]);
        }
      }
    } else
#endif
    for (int s = 0; s < kStepsPerGroup; ++s, code += kVecRows * 4) {
      VI wv[kVecs];
      for (int v = 0; v < kVecs; ++v) wv[v] = LoadI(code + v * steps * kVecRows * 4);
      for (int t = 0; t < T; ++t) {
        int32_t four;
        std::memcpy(&four, xq[t] + g * kGroup + s * kStepCols, 4);
        const VI xv = Broadcast32(four);
        for (int v = 0; v < kVecs; ++v) sum[t][v] = kBits == 8 ? Dot8(sum[t][v], xv, wv[v]) : Dot16(sum[t][v], xv, wv[v]);
      }
    }
    const int64_t b = g * kGroup / 32;  // the chunk's block of this group
    VF sc[kVecs];
    for (int v = 0; v < kVecs; ++v) sc[v] = LoadF(tile.scale + (v * groups + g) * kVecRows);
    for (int t = 0; t < T; ++t) {
      const VF d = SetF(xd[t][b * 4]);
      for (int v = 0; v < kVecs; ++v) acc[t][v] = FmaF(ToF(sum[t][v]), MulF(sc[v], d), acc[t][v]);
    }
    if constexpr (gemm_block::has_min(kType)) {  // groups of 32: one per block
      for (int v = 0; v < kVecs; ++v) sc[v] = LoadF(tile.min + (v * groups + g) * kVecRows);
      for (int t = 0; t < T; ++t) {
        const VF s = SetF(xs[t][b * 4] * 4.0f);
        for (int v = 0; v < kVecs; ++v) acc[t][v] = FmaF(sc[v], s, acc[t][v]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < kVecs; ++v) {
      if (rows[v] > 0) StoreRows(y + (t0 + t) * n_out + r + v * kVecRows, acc[t][v], rows[v]);
    }
  }
}

// Kernel for the last n < kT tokens from t0.
template <GgmlType kType, int kBits, int T = kT - 1>
static void KernelTail(int n, const Tile<kBits>& tile, const GemmQ8Activations& x, int64_t t0, int64_t k0, int64_t kc,
                       float* y, int64_t n_out, int64_t r, int n_rows, bool first) {
  if constexpr (T >= 1) {
    if (n == T) return Kernel<kType, kBits, T>(tile, x, t0, k0, kc, y, n_out, r, n_rows, first);
    KernelTail<kType, kBits, T - 1>(n, tile, x, t0, k0, kc, y, n_out, r, n_rows, first);
  }
}

template <GgmlType kType, int kBits>
static void RowsTyped(const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1) {
  Tile<kBits> tile;
  const int64_t n_tok = x.rounded.n_tok, nb = w.n_in / 32;
  constexpr int64_t kChunkBlocks = kChunk<kBits> / 32;
  for (int64_t r = r0; r < r1; r += kTileRows) {
    const int n_rows = static_cast<int>(std::min(kTileRows, r1 - r));
    for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
      const int64_t b1 = std::min(nb, b0 + kChunkBlocks);
      Unpack<kType, kBits>(w, r, r + n_rows, b0, b1, tile);
      const int64_t k0 = b0 * 32, kc = (b1 - b0) * 32;
      int64_t t = 0;
      for (; t + kT <= n_tok; t += kT) Kernel<kType, kBits, kT>(tile, x, t, k0, kc, y, w.n_out, r, n_rows, b0 == 0);
      if (t < n_tok) {
        KernelTail<kType, kBits>(static_cast<int>(n_tok - t), tile, x, t, k0, kc, y, w.n_out, r, n_rows, b0 == 0);
      }
    }
  }
}

void Rows(const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1) {
  gemm_block::with_type(w.type, [&](auto type) {
    if (x.rounded.bits == 8) {
      if constexpr (SNAPKV_GEMM_VNNI || decltype(type)::value != GgmlType::Q8_0) {
        RowsTyped<decltype(type)::value, 8>(w, x, y, r0, r1);
      }
    } else {
      RowsTyped<decltype(type)::value, 16>(w, x, y, r0, r1);
    }
  });
}

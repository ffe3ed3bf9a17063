// The x86 kernels of matvec_q8.h. Included twice by matvec_q8_x86.cpp, each time inside a
// compiler target region and its own namespace: with SNAPKV_Q8_VNNI 1 (AVX-512 VNNI on 256-bit
// vectors) and 0 (AVX2). No include guard, on purpose. Everything but Rows and QuantizeBlocks (in
// the AVX2 pass only) is static, and the headers it needs are included before the regions, so
// nothing compiled for one instruction set is shared with code that runs on a CPU without it.

#include "ops/matvec_x86_dot-inl.h"

static inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 16 bytes at lo in the low half, 16 at hi in the high half.
static inline __m256i Load2x16(const void* lo, const void* hi) {
  const __m128i l = _mm_loadu_si128(static_cast<const __m128i*>(lo));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(l), _mm_loadu_si128(static_cast<const __m128i*>(hi)), 1);
}

// The f16 scales of two blocks, at a and b, as floats in lanes 0..3 and 4..7; with kWithMin also
// the f16 mins stored after them, in *m.
template <bool kWithMin>
static inline __m256 PairScales(const uint8_t* a, const uint8_t* b, __m256* m) {
  uint32_t wa, wb;  // d and (for Q4_1) m of each block
  std::memcpy(&wa, a, 4);
  std::memcpy(&wb, b, 4);
  const __m256 v = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(wa)), static_cast<int>(wb), 1)));
  if constexpr (kWithMin) *m = _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3));
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2));
}

// Q4_0 (kStoredMin false) and Q4_1 rows [r0, r1) for tokens t0 .. t0 + T, two blocks at a time:
// the 32 code bytes of two blocks split into low and high nibbles are each multiplied by the
// matching 16 + 16 activations.
template <bool kStoredMin, int T>
static void Q4Rows(const WeightMatrix& w, const Q8Activations& x, int64_t t0, float* y, int64_t r0, int64_t r1) {
  const GgmlType type = kStoredMin ? GgmlType::Q4_1 : GgmlType::Q4_0;
  constexpr int64_t kBlockBytes = kStoredMin ? 20 : 18;
  constexpr int64_t kCodes = kStoredMin ? 4 : 2;
  const int64_t nb = w.n_in / kQ8Block;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const uint8_t* first = w.data + static_cast<size_t>(r0) * w.row_bytes;
  const size_t total = static_cast<size_t>(r1 - r0) * w.row_bytes;
  PrefetchCursor ahead(first, total);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + static_cast<size_t>(r) * w.row_bytes;
    __m256 acc[T], off[T];
    for (int t = 0; t < T; ++t) acc[t] = off[t] = _mm256_setzero_ps();
    // Running pointers: with the indices worked out afresh for every pair, about a third of the
    // loop's instructions are address arithmetic, which slows the kernel even on a CPU that
    // dispatches many instructions a cycle.
    const uint8_t* blk = row;
    const int8_t* xq[T];
    const float* xd[T];
    const float* xs[T];
    for (int t = 0; t < T; ++t) {
      xq[t] = x.q_pairs.data() + (t0 + t) * (nb / 2) * 2 * kQ8Block;
      xd[t] = x.d4.data() + (t0 + t) * nb * 4;
      xs[t] = x.sum4.data() + (t0 + t) * nb * 4;
    }
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, blk += 2 * kBlockBytes) {
      ahead.reached(blk);
      const __m256i codes = Load2x16(blk + kCodes, blk + kBlockBytes + kCodes);
      const __m256i lo = _mm256_and_si256(codes, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
      __m256 m;
      const __m256 d = PairScales<kStoredMin>(blk, blk + kBlockBytes, &m);
      if constexpr (!kStoredMin) m = _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
      for (int t = 0; t < T; ++t) {
        const __m256i s = DotAdd2(_mm256_setzero_si256(), lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t])),
                                  hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + 32)));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_loadu_ps(xd[t])), acc[t]);
        off[t] = _mm256_fmadd_ps(m, _mm256_loadu_ps(xs[t]), off[t]);
        xq[t] += 2 * kQ8Block;
        xd[t] += 8;
        xs[t] += 8;
      }
    }
    for (int t = 0; t < T; ++t) {
      float sum = HorizontalSum(_mm256_add_ps(acc[t], off[t]));
      if (b < nb) {
        const int64_t tb = (t0 + t) * nb + b;
        sum += q8_block::scale(blk) * x.d4[tb * 4] * static_cast<float>(q8_block::dot(type, blk, x, tb)) +
               q8_block::offset(type, blk) * 4.0f * x.sum4[tb * 4];
      }
      y[(t0 + t) * w.n_out + r] = sum;
    }
  }
}

// A Q8_0 block times a token's block of rounded activations xq with scale xd, added to acc: the
// sign of each weight moves onto its activation, so that vpmaddubsw / vpdpbusd multiply |w|
// (unsigned) by sign(w) x.
static inline __m256 Q8Block(const uint8_t* blk, const int8_t* xq, float xd, __m256 acc) {
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  const __m256i xs = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)), codes);
  const __m256i s = DotAdd(_mm256_setzero_si256(), _mm256_abs_epi8(codes), xs);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(q8_block::scale(blk) * xd), acc);
}

// Q8_0 rows; even and odd blocks feed two accumulators. Running pointers, as in Q4Rows.
template <int T>
static void Q8Rows(const WeightMatrix& w, const Q8Activations& x, int64_t t0, float* y, int64_t r0, int64_t r1) {
  constexpr int64_t kBlockBytes = 34;
  const int64_t nb = w.n_in / kQ8Block;
  const uint8_t* first = w.data + static_cast<size_t>(r0) * w.row_bytes;
  const size_t total = static_cast<size_t>(r1 - r0) * w.row_bytes;
  PrefetchCursor ahead(first, total);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + static_cast<size_t>(r) * w.row_bytes;
    __m256 even[T], odd[T];
    const int8_t* xq[T];
    const float* xd[T];
    for (int t = 0; t < T; ++t) {
      even[t] = odd[t] = _mm256_setzero_ps();
      xq[t] = x.q.data() + (t0 + t) * nb * kQ8Block;
      xd[t] = x.d4.data() + (t0 + t) * nb * 4;
    }
    const uint8_t* blk = row;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, blk += 2 * kBlockBytes) {
      ahead.reached(blk);
      for (int t = 0; t < T; ++t) {
        even[t] = Q8Block(blk, xq[t], xd[t][0], even[t]);
        odd[t] = Q8Block(blk + kBlockBytes, xq[t] + kQ8Block, xd[t][4], odd[t]);
        xq[t] += 2 * kQ8Block;
        xd[t] += 8;
      }
    }
    for (int t = 0; t < T; ++t) {
      if (b < nb) even[t] = Q8Block(blk, xq[t], xd[t][0], even[t]);
      y[(t0 + t) * w.n_out + r] = HorizontalSum(_mm256_add_ps(even[t], odd[t]));
    }
  }
}

// Rows [r0, r1) (multiples of 8) of a matrix interleaved by 8 rows (rows8.h), 8 rows at a time,
// for tokens t0 .. t0 + T: per block, each 32-byte chunk of codes (4 bytes of each row) meets the
// token's matching activations broadcast to all 8 lanes, and the lanes of the sums are the rows.
// With 8-bit activations a dot-product instruction takes the chunk's 4 bytes per row with 4
// activation bytes; Q8_0 codes are signed, so as in Q8Block |w| meets sign(w) x. With 16 bits
// (kBits) each lane is read as two 16-bit halves, whose nibbles (Q4) or bytes (Q8_0) give 2
// weights of the row at a time, which meet 2 activations (in the order of q16_slot); two sums per
// token (three for 4-bit codes, below) shorten the chain of dependent multiply-adds.
// Except Q8_0 at 16 bits with VNNI, which reads the codes as bytes (kBytes): x = 256 xh + xl meets
// the signed codes c in two 8-bit dot products, xl c and (c + 128) xh (the unsigned operand must be
// one of the two), less 128 times the block's sum of xh: per chunk two dot products per token and
// one shared xor, where the 16-bit form takes two and three shared shifts (3-4 % faster decode on
// the 1B shape's Q8_0, Xeon VM).
template <GgmlType kType, int T, int kBits>
static void Rows8(const WeightMatrix& w, const Q8Activations& x, const Q16Bytes& bytes, int64_t t0, float* y,
                  int64_t r0, int64_t r1) {
  using Code = std::conditional_t<kBits == 16, int16_t, int8_t>;
  constexpr bool kBytes = SNAPKV_Q8_VNNI && kBits == 16 && kType == GgmlType::Q8_0;
  constexpr int64_t kGroupBlock = 8 * q8_block::bytes(kType);
  constexpr int64_t kCodesAt = 8 * q8_block::codes_at(kType);  // after the 8 rows' scales (and mins)
  const int64_t nb = w.n_in / kQ8Block;
  const __m256i low4 = kBits == 16 ? _mm256_set1_epi16(0x0F) : _mm256_set1_epi8(0x0F);
  const size_t group_bytes = 8 * w.row_bytes;
  const uint8_t* first = w.rows8 + static_cast<size_t>(r0 / 8) * group_bytes;
  const size_t total = static_cast<size_t>((r1 - r0) / 8) * group_bytes;
  prefetch_rows_start(first, total);
  for (int64_t g = r0 / 8; g < r1 / 8; ++g) {
    const uint8_t* p = w.rows8 + static_cast<size_t>(g) * group_bytes;
    __m256 acc[T], off[T];
    const Code* xq[T];
    const float* xd[T];
    const float* xs[T];
    const int8_t* xh[T];
    const uint8_t* xl[T];
    const int32_t* hs[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = off[t] = _mm256_setzero_ps();
      if constexpr (kBytes) {
        xh[t] = bytes.high.data() + (t0 + t) * nb * kQ8Block;
        xl[t] = bytes.low.data() + (t0 + t) * nb * kQ8Block;
        hs[t] = bytes.high_sums.data() + (t0 + t) * nb;
      }
      if constexpr (kBits == 16) xq[t] = x.q16.data() + (t0 + t) * nb * kQ8Block;
      else xq[t] = x.q.data() + (t0 + t) * nb * kQ8Block;
      xd[t] = x.d4.data() + (t0 + t) * nb * 4;
      xs[t] = x.sum4.data() + (t0 + t) * nb * 4;
    }
    for (int64_t b = 0; b < nb; ++b, p += kGroupBlock) {
      // A block's bytes kPrefetchBytes ahead, a few lines per block: asked for a group (3-8 KiB)
      // at a time, the prefetches queue up behind each other and the matvecs from memory slow
      // down. Into L2 on Intel (kStream, row_prefetch.h).
      if (static_cast<size_t>(p - first) + kPrefetchBytes < total) {
        prefetch_span_ahead<kGroupBlock, PrefetchTo::kStream>(p);
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      __m256i s[T], s1[T], s2[T];
      for (int t = 0; t < T; ++t) s[t] = s1[t] = s2[t] = _mm256_setzero_si256();
#pragma GCC unroll 8  // so that the runs of pair sums (below) are known at compile time
      for (int k = 0; k < (kType == GgmlType::Q8_0 ? 8 : 4); ++k) {
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kCodesAt + 32 * k));
        if constexpr (kBytes) {
          const __m256i biased = _mm256_xor_si256(c, _mm256_set1_epi8(static_cast<char>(0x80)));  // c + 128
          for (int t = 0; t < T; ++t) {
            s[t] = DotAdd(s[t], biased, Broadcast4(xh[t] + 4 * k));
            s1[t] = DotAdd(s1[t], Broadcast4(xl[t] + 4 * k), c);
          }
        } else if constexpr (kBits == 16 && kType == GgmlType::Q8_0) {  // bytes 0 and 2, then 1 and 3, sign-extended
          const __m256i even = _mm256_srai_epi16(_mm256_slli_epi16(c, 8), 8), odd = _mm256_srai_epi16(c, 8);
          for (int t = 0; t < T; ++t) {
            s[t] = DotAdd16(s[t], even, Broadcast4(xq[t] + 4 * k));
            s1[t] = DotAdd16(s1[t], odd, Broadcast4(xq[t] + 4 * k + 2));
          }
        } else if constexpr (kBits == 16) {
          // The nibbles of each 16-bit half, masked in place: the low nibbles of bytes 0 and 2
          // (x1), their high nibbles (x16), the low nibbles of bytes 1 and 3 (x256); the high
          // nibbles of bytes 1 and 3 shifted down. Three sums, one per scale, combined per block.
          const __m256i lo02 = _mm256_and_si256(c, low4), hi13 = _mm256_srli_epi16(c, 12);
          const __m256i hi02x16 = _mm256_and_si256(c, _mm256_slli_epi16(low4, 4));
          const __m256i lo13x256 = _mm256_and_si256(c, _mm256_slli_epi16(low4, 8));
          for (int t = 0; t < T; ++t) {
            s[t] = DotAdd16(DotAdd16(s[t], lo02, Broadcast4(xq[t] + 4 * k)), hi13, Broadcast4(xq[t] + 18 + 4 * k));
            s1[t] = DotAdd16(s1[t], hi02x16, Broadcast4(xq[t] + 16 + 4 * k));
            s2[t] = DotAdd16(s2[t], lo13x256, Broadcast4(xq[t] + 4 * k + 2));
          }
        } else if constexpr (kType == GgmlType::Q8_0) {
          const __m256i a = _mm256_abs_epi8(c);
          for (int t = 0; t < T; ++t) s[t] = DotAdd(s[t], a, _mm256_sign_epi8(Broadcast4(xq[t] + 4 * k), c));
        } else {
          const __m256i lo = _mm256_and_si256(c, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), low4);
          for (int t = 0; t < T; ++t) {
            // one token adds the whole block's 16-bit pair sums in s1 before widening them (AVX2)
            DotAddRun<15, 128, T == 1 ? 4 : 1>(s[t], s1[t], lo, Broadcast4(xq[t] + 4 * k), hi, Broadcast4(xq[t] + 16 + 4 * k), k);
          }
        }
      }
      // The offsets times 4: sum4 holds a quarter of a block's sum.
      __m256 m4 = _mm256_setzero_ps();
      if constexpr (kType == GgmlType::Q4_1) {
        m4 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16))), _mm256_set1_ps(4.0f));
      } else if constexpr (kType == GgmlType::Q4_0) {
        m4 = _mm256_mul_ps(d, _mm256_set1_ps(-32.0f));
      }
      for (int t = 0; t < T; ++t) {
        __m256i si = s[t];
        if constexpr (kBytes) {  // exact: |256 (s - 128 sum xh)| <= 256 * 32 * 128 * 128
          si = _mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(s[t], _mm256_set1_epi32(128 * *hs[t])), 8), s1[t]);
          xh[t] += kQ8Block;
          xl[t] += kQ8Block;
          ++hs[t];
        } else if constexpr (kBits == 16 && kType == GgmlType::Q8_0) {
          si = _mm256_add_epi32(s[t], s1[t]);
        } else if constexpr (kBits == 16) {  // exact: s2 is a multiple of 256, s1 + s2 / 16 of 16
          si = _mm256_add_epi32(s[t], _mm256_srai_epi32(_mm256_add_epi32(s1[t], _mm256_srai_epi32(s2[t], 4)), 4));
        }
        const __m256 sum = _mm256_cvtepi32_ps(si);
        acc[t] = _mm256_fmadd_ps(sum, _mm256_mul_ps(d, _mm256_set1_ps(*xd[t])), acc[t]);
        if constexpr (kType != GgmlType::Q8_0) off[t] = _mm256_fmadd_ps(m4, _mm256_set1_ps(*xs[t]), off[t]);
        xq[t] += kQ8Block;
        xd[t] += 4;
        xs[t] += 4;
      }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * w.n_out + 8 * g, _mm256_add_ps(acc[t], off[t]));
  }
}

// Rows8 for both widths: 16-bit activations only come with w.rows8 set (q8_matvec_rows).
template <int kBits, int T>
static void Rows8Typed(const WeightMatrix& w, const Q8Activations& x, const Q16Bytes& bytes, int64_t t0, float* y,
                       int64_t r0, int64_t r1) {
  switch (w.type) {
    case GgmlType::Q4_0: return Rows8<GgmlType::Q4_0, T, kBits>(w, x, bytes, t0, y, r0, r1);
    case GgmlType::Q4_1: return Rows8<GgmlType::Q4_1, T, kBits>(w, x, bytes, t0, y, r0, r1);
    default: return Rows8<GgmlType::Q8_0, T, kBits>(w, x, bytes, t0, y, r0, r1);
  }
}

template <int T>
static void RowsT(const WeightMatrix& w, const Q8Activations& x, const Q16Bytes& bytes, int64_t t0, float* y,
                  int64_t r0, int64_t r1) {
  if (x.bits == 16) return Rows8Typed<16, T>(w, x, bytes, t0, y, r0, r1);
  if (w.rows8) return Rows8Typed<8, T>(w, x, bytes, t0, y, r0, r1);
  switch (w.type) {
    case GgmlType::Q4_0: return Q4Rows<false, T>(w, x, t0, y, r0, r1);
    case GgmlType::Q4_1: return Q4Rows<true, T>(w, x, t0, y, r0, r1);
    default: return Q8Rows<T>(w, x, t0, y, r0, r1);
  }
}

#if !SNAPKV_Q8_VNNI  // one copy is enough: AVX-512 would not make it faster
// quantize_blocks of matvec_q8.cpp, 8 floats at a time, with the same results: the same largest
// magnitude (a NaN skipped by max as by the scalar comparison), scale, clamp and rounding (toward
// zero, then a fraction of 0.5 or more away from it), exact integer sums and order of the codes.
template <class Code>
static void QuantizeBlocksT(const float* x, int64_t n_blocks, Code* q, float* d4, float* sum4) {
  constexpr float kMax = std::numeric_limits<Code>::max();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 largest = _mm256_set1_ps(std::numeric_limits<float>::max());
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    int finite = 0xFF;
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + b * kQ8Block + 8 * k);
      const __m256 a = _mm256_and_ps(v[k], abs_mask);
      amax = _mm256_max_ps(a, amax);  // the second operand where either is NaN
      finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, largest, _CMP_LE_OQ));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float d = finite == 0xFF ? _mm_cvtss_f32(m) / kMax : std::numeric_limits<float>::quiet_NaN();
    const float id = d >= std::numeric_limits<float>::min() ? 1.0f / d : 0.0f;
    __m256i codes[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 scaled = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(id)), _mm256_set1_ps(-kMax)),
                                          _mm256_set1_ps(kMax));
      const __m256i i = _mm256_cvttps_epi32(scaled);
      const __m256 frac = _mm256_sub_ps(scaled, _mm256_cvtepi32_ps(i));
      // A true comparison is -1: subtracting it adds 1.
      const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
      const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ));
      codes[k] = id == 0.0f ? _mm256_setzero_si256() : _mm256_add_epi32(_mm256_sub_epi32(i, up), down);
    }
    __m256i total = _mm256_add_epi32(_mm256_add_epi32(codes[0], codes[1]), _mm256_add_epi32(codes[2], codes[3]));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    const int32_t code_sum = _mm_cvtsi128_si32(t);
    // Saturating packs interleave the 128-bit halves; the permutations put the codes back in order.
    if constexpr (sizeof(Code) == 1) {
      const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(codes[0], codes[1]), _mm256_packs_epi32(codes[2], codes[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQ8Block),
                          _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    } else {  // each 4 codes in the order 0, 2, 1, 3 (q16_slot), then packed 8 codes at a time
      for (int k = 0; k < 4; k += 2) {
        const __m256i packed = _mm256_packs_epi32(_mm256_shuffle_epi32(codes[k], 0xD8), _mm256_shuffle_epi32(codes[k + 1], 0xD8));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQ8Block + 8 * k), _mm256_permute4x64_epi64(packed, 0xD8));
      }
    }
    _mm_storeu_ps(d4 + b * 4, _mm_set1_ps(d));
    _mm_storeu_ps(sum4 + b * 4, _mm_set1_ps(d * static_cast<float>(code_sum) * 0.25f));
  }
}

void QuantizeBlocks(const float* x, int64_t n_blocks, int8_t* q, float* d4, float* sum4) {
  QuantizeBlocksT(x, n_blocks, q, d4, sum4);
}

void QuantizeBlocks(const float* x, int64_t n_blocks, int16_t* q, float* d4, float* sum4) {
  QuantizeBlocksT(x, n_blocks, q, d4, sum4);
}

// q16_split_bytes, a block of 32 codes at a time.
void SplitBytes(const int16_t* q, int64_t n_blocks, int8_t* high, uint8_t* low, int32_t* high_sums) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m256i h[2], l[2];
    for (int k = 0; k < 2; ++k) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + b * kQ8Block + 16 * k));
      v = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(v, 0xD8), 0xD8);  // each 4 from slots 0, 2, 1, 3
      h[k] = _mm256_srai_epi16(v, 8);
      l[k] = _mm256_and_si256(v, _mm256_set1_epi16(0xFF));
    }
    // The packs interleave the 128-bit halves; the permutations put the bytes back in order.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(high + b * kQ8Block),
                        _mm256_permute4x64_epi64(_mm256_packs_epi16(h[0], h[1]), 0xD8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(low + b * kQ8Block),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(l[0], l[1]), 0xD8));
    const __m256i sums = _mm256_madd_epi16(_mm256_add_epi16(h[0], h[1]), _mm256_set1_epi16(1));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    high_sums[b] = _mm_cvtsi128_si32(t);
  }
}
#endif

// Up to 4 tokens per pass over the rows, so each weight block is decoded once for all of them.
// bytes: x's codes split (q16_split_bytes) where the VNNI kernel reads Q8_0 at 16 bits.
void Rows(const WeightMatrix& w, const Q8Activations& x, const Q16Bytes& bytes, float* y, int64_t r0, int64_t r1) {
  for (int64_t t0 = 0; t0 < x.n_tok; t0 += 4) {
    switch (x.n_tok - t0) {
      case 1: RowsT<1>(w, x, bytes, t0, y, r0, r1); break;
      case 2: RowsT<2>(w, x, bytes, t0, y, r0, r1); break;
      case 3: RowsT<3>(w, x, bytes, t0, y, r0, r1); break;
      default: RowsT<4>(w, x, bytes, t0, y, r0, r1); break;
    }
  }
}

// The x86 kernels of the K-quants (Q4_K, Q5_K, Q6_K) for the integer-activation decode path
// (matvec_q8.h), on matrices interleaved by 8 rows (rows8.h). Included twice by matvec_qk_x86.cpp,
// each time inside a compiler target region and its own namespace: with SNAPKV_Q8_VNNI 1
// (AVX-512 VNNI on 256-bit vectors) and 0 (AVX2). No include guard, on purpose. Everything but
// Rows is static, and the headers it needs are included before the regions.
//
// As in the Q4_0 kernels, each 32-byte chunk of codes holds 4 bytes of each of 8 rows; a
// dot-product instruction with 4 activations broadcast to all lanes adds to the 8 rows' sums at
// once. A K-quant's scales change every 32 weights (Q6_K: 16), so a sum in int32 lanes covers one
// sub-block and then is scaled in float: by the 8 rows' d * sc (and for Q4_K / Q5_K the mins by
// dmin * m) times the activation block's d, all 8 rows per instruction. The 6-bit scales and mins
// of Q4_K / Q5_K are unpacked for 8 rows at once from their 12 packed bytes per row, a row per
// 32-bit lane; Q6_K's offset of 32 is taken off each sub-block's integer sum as 32 times the sum
// of its activation codes.
//
// 8-bit activations meet the unsigned codes (4 to 6 bits) in vpdpbusd / vpmaddubsw. With VNNI,
// 16-bit ones are split into bytes, x = 256 xh + xl with xh signed and xl unsigned
// (QkActivations), so that the same codes meet them in two 8-bit dot products, sum c xh and sum xl
// c (the codes in the signed operand), combined as 256 times the first plus the second. AVX2
// multiplies 16-bit words instead (kWords): each code vector split into its even and odd bytes (an
// AND and a shift) meets the activation pairs that q16_slot puts side by side in two vpmaddwd,
// where the bytes would take two vpmaddubsw and one or two vpmaddwd to widen their sums; on CPUs
// with one vector multiply pipe (the first Zen generation) those multiplies are what a decode
// step waits for.

#include "ops/matvec_x86_dot-inl.h"

// Byte i (0..3) of every 32-bit lane of v, zero-extended.
template <int i>
static inline __m256i LaneByte(__m256i v) {
  if constexpr (i == 3) return _mm256_srli_epi32(v, 24);
  else return _mm256_and_si256(_mm256_srli_epi32(v, 8 * i), _mm256_set1_epi32(0xFF));
}

// Byte i (0..3) of every 32-bit lane of v, sign-extended.
template <int i>
static inline __m256i LaneByteSigned(__m256i v) {
  if constexpr (i == 3) return _mm256_srai_epi32(v, 24);
  else return _mm256_srai_epi32(_mm256_slli_epi32(v, 24 - 8 * i), 24);
}

// v shifted left by n bits (right for negative n) in 16-bit lanes. Callers keep bits that stay
// within their byte, for which this is a per-byte shift.
template <int n>
static inline __m256i Shift16(__m256i v) {
  if constexpr (n > 0) return _mm256_slli_epi16(v, n);
  else if constexpr (n < 0) return _mm256_srli_epi16(v, -n);
  else return v;
}

// Whether 16-bit activations are multiplied as words (AVX2) rather than as bytes (VNNI).
constexpr bool kWords = !SNAPKV_Q8_VNNI;

// The activations of one token at a super-block: the 8-bit codes in element order (kBits 8); with
// 16 bits, the codes in q16_slot's order (kWords), or their high bytes xh and low bytes xl in
// element order.
struct TokenActs {
  const int8_t* q;    // the 8-bit codes, or xh
  const uint8_t* lo;  // xl
  const int16_t* w;   // the 16-bit codes
};

template <int kBits>
static inline TokenActs TokenAt(const Q8Activations& x, const QkActivations& qk, int64_t t) {
  const int64_t at = t * x.n_in;
  if constexpr (kBits == 8) return {x.q.data() + at, nullptr, nullptr};
  else if constexpr (kWords) return {nullptr, nullptr, x.q16.data() + at};
  else return {qk.bytes.high.data() + at, qk.bytes.low.data() + at, nullptr};
}

// x moved on to the next super-block.
template <int kBits>
static inline void NextSuperBlock(TokenActs& x) {
  if constexpr (kBits == 8) {
    x.q += 256;
  } else if constexpr (kWords) {
    x.w += 256;
  } else {
    x.q += 256;
    x.lo += 256;
  }
}

// An int32 sum of one token over a sub-block: of the products with the 8-bit or 16-bit codes, or
// with xh (s) and with xl (s2). AVX2 adds runs of 8-bit products' 16-bit pair sums in p before
// widening them.
struct Sum {
  __m256i s, s2, p;
};

// s plus the products of two code vectors of one sub-block (4 codes per row per lane, unsigned,
// at most kMaxCode <= 63), c0 with activations e .. e + 3 of the token and c1 with e + 4 .. e + 7,
// broadcast: pair i of the sub-block. With 16-bit words, codes e and e + 2 (each lane's even
// bytes) meet the pair of activations at slot e, codes e + 1 and e + 3 (the odd bytes) the pair at
// slot e + 2. With bytes (VNNI) the low bytes go in as the unsigned operand. AVX2 adds the 16-bit
// pair sums of as many 8-bit products as keep them below 2^15 before widening them
// (PairSumsRun), at most kMaxRun pairs: the whole sub-block for one token, one pair (two vectors)
// for several (their pending sums would not fit in the registers). kMaxRun divides the
// sub-block's pairs.
template <int kBits, int kMaxCode, int kMaxRun>
static inline void AddCodes2(Sum& s, __m256i c0, __m256i c1, const TokenActs& x, int e, int i) {
  if constexpr (kBits == 16 && kWords) {
    const __m256i even = _mm256_set1_epi16(0xFF);
    s.s = DotAdd16(s.s, _mm256_and_si256(c0, even), Broadcast4(x.w + e));
    s.s = DotAdd16(s.s, _mm256_srli_epi16(c0, 8), Broadcast4(x.w + e + 2));
    s.s = DotAdd16(s.s, _mm256_and_si256(c1, even), Broadcast4(x.w + e + 4));
    s.s = DotAdd16(s.s, _mm256_srli_epi16(c1, 8), Broadcast4(x.w + e + 6));
  } else {
    DotAddRun<kMaxCode, 128, kMaxRun>(s.s, s.p, c0, Broadcast4(x.q + e), c1, Broadcast4(x.q + e + 4), i);
    if constexpr (kBits == 16) s.s2 = DotAdd2(s.s2, Broadcast4(x.lo + e), c0, Broadcast4(x.lo + e + 4), c1);
  }
}

// The sub-block's integer sum of codes times activation codes (exact: at most 63 * 32767 * 32).
template <int kBits>
static inline __m256i Total(const Sum& s) {
  if constexpr (kBits == 16 && !kWords) return _mm256_add_epi32(_mm256_slli_epi32(s.s, 8), s.s2);
  return s.s;
}

// A Q4_K / Q5_K super-block's d, 4 dmin (sum4 holds a quarter of a block's sum), and its 8 rows'
// unpacked 6-bit scales and mins: byte j % 4 of each 32-bit lane of sc[j / 4] and mn[j / 4].
struct Q45Scales {
  __m256 d, dmin4;
  __m256i sc[2], mn[2];
};

// Q4_K and Q5_K rows of a group's super-block: the 64 weights of granule g (sub-blocks 2g and
// 2g + 1) are 8 chunks of 4 code bytes per row, whose low nibbles belong to sub-block 2g and high
// nibbles to 2g + 1; a Q5_K chunk of fifth bits (bit 2g of a byte for its low nibble, bit 2g + 1
// for its high one) serves the same 4 weights of every granule.
// The two sub-blocks' products are added to acc, their mins times the activations' sums to off.
template <bool kQ5, int kBits, int T, int g>
static inline void Q45Granule(const uint8_t* codes, const uint8_t* high, const Q45Scales& sb, const TokenActs xq[T],
                              const float* const xd[T], const float* const xs[T], __m256 acc[T], __m256 off[T]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  Sum a[T], b[T];
  for (int t = 0; t < T; ++t) a[t] = b[t] = Sum{};
  __m256i lo[2], hi[2];  // chunks k and k + 1
#pragma GCC unroll 4  // so that AddCodes2's runs are known at compile time
  for (int k = 0; k < 8; k += 2) {
    for (int i = 0; i < 2; ++i) {
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * (8 * g + k + i)));
      lo[i] = _mm256_and_si256(c, low4);
      hi[i] = _mm256_and_si256(_mm256_srli_epi16(c, 4), low4);
      if constexpr (kQ5) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high + 32 * (k + i)));
        lo[i] = _mm256_or_si256(lo[i], _mm256_and_si256(Shift16<4 - 2 * g>(h), bit4));
        hi[i] = _mm256_or_si256(hi[i], _mm256_and_si256(Shift16<3 - 2 * g>(h), bit4));
      }
    }
    for (int t = 0; t < T; ++t) {
      AddCodes2<kBits, kQ5 ? 31 : 15, T == 1 ? 4 : 1>(a[t], lo[0], lo[1], xq[t], 64 * g + 4 * k, k / 2);
      AddCodes2<kBits, kQ5 ? 31 : 15, T == 1 ? 4 : 1>(b[t], hi[0], hi[1], xq[t], 64 * g + 32 + 4 * k, k / 2);
    }
  }
  const __m256 da = _mm256_mul_ps(sb.d, _mm256_cvtepi32_ps(LaneByte<(2 * g) % 4>(sb.sc[g / 2])));
  const __m256 db = _mm256_mul_ps(sb.d, _mm256_cvtepi32_ps(LaneByte<(2 * g + 1) % 4>(sb.sc[g / 2])));
  const __m256 ma = _mm256_mul_ps(sb.dmin4, _mm256_cvtepi32_ps(LaneByte<(2 * g) % 4>(sb.mn[g / 2])));
  const __m256 mb = _mm256_mul_ps(sb.dmin4, _mm256_cvtepi32_ps(LaneByte<(2 * g + 1) % 4>(sb.mn[g / 2])));
  for (int t = 0; t < T; ++t) {  // sub-blocks 2g and 2g + 1 are activation blocks 2g and 2g + 1
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Total<kBits>(a[t])), _mm256_mul_ps(da, _mm256_set1_ps(xd[t][4 * (2 * g)])),
                             acc[t]);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Total<kBits>(b[t])),
                             _mm256_mul_ps(db, _mm256_set1_ps(xd[t][4 * (2 * g + 1)])), acc[t]);
    off[t] = _mm256_fmadd_ps(ma, _mm256_set1_ps(xs[t][4 * (2 * g)]), off[t]);
    off[t] = _mm256_fmadd_ps(mb, _mm256_set1_ps(xs[t][4 * (2 * g + 1)]), off[t]);
  }
}

// Rows [r0, r1) (multiples of 8) of an interleaved Q4_K or Q5_K matrix for tokens t0 .. t0 + T.
template <bool kQ5, int T, int kBits>
static void Q45Rows8(const WeightMatrix& w, const Q8Activations& x, const QkActivations& qk, int64_t t0, float* y,
                     int64_t r0, int64_t r1) {
  constexpr int64_t kGroupBlock = 8 * (kQ5 ? 176 : 144);
  // After the 8 rows' d and dmin: 3 chunks of packed scales, (Q5_K) 8 of fifth bits, 32 of codes.
  constexpr int64_t kScalesAt = 32, kHighAt = 128, kCodesAt = kQ5 ? 128 + 256 : 128;
  const int64_t nsb = w.n_in / 256, nb = w.n_in / kQ8Block;
  const size_t group_bytes = 8 * w.row_bytes;
  const uint8_t* first = w.rows8 + static_cast<size_t>(r0 / 8) * group_bytes;
  const size_t total = static_cast<size_t>((r1 - r0) / 8) * group_bytes;
  const __m256i m3f = _mm256_set1_epi8(0x3F), m0f = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  prefetch_rows_start(first, total);
  for (int64_t grp = r0 / 8; grp < r1 / 8; ++grp) {
    const uint8_t* p = w.rows8 + static_cast<size_t>(grp) * group_bytes;
    __m256 acc[T], off[T];
    TokenActs xq[T];
    const float* xd[T];
    const float* xs[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = off[t] = _mm256_setzero_ps();
      xq[t] = TokenAt<kBits>(x, qk, t0 + t);
      xd[t] = x.d4.data() + (t0 + t) * nb * 4;
      xs[t] = x.sum4.data() + (t0 + t) * nb * 4;
    }
    for (int64_t sb = 0; sb < nsb; ++sb, p += kGroupBlock) {
      // The super-block kPrefetchBytes ahead, a quarter before each granule.
      const bool ahead = static_cast<size_t>(p - first) + kPrefetchBytes < total;
      const auto prefetch = [&](int i) {
        if (ahead) prefetch_part_ahead<kGroupBlock, 4, PrefetchTo::kL2ThenL1>(p, i);
      };
      prefetch(0);
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      // sum4 holds a quarter of a block's sum.
      const __m256 dmin4 =
          _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16))), _mm256_set1_ps(4.0f));
      // Bytes 0..11 of each row's packed scales, a row per 32-bit lane: scale j < 4 is the low 6
      // bits of byte j, min j of byte j + 4; scale j >= 4 is the low nibble of byte j + 4 with the
      // top 2 bits of byte j - 4 above it, min j the high nibble of byte j + 4 with the top bits
      // of byte j. Unpacked: byte j % 4 of each lane of sc[j / 4] and mn[j / 4].
      const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kScalesAt));
      const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kScalesAt + 32));
      const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kScalesAt + 64));
      const __m256i sc[2] = {_mm256_and_si256(v0, m3f),
                             _mm256_or_si256(_mm256_and_si256(v2, m0f), _mm256_and_si256(_mm256_srli_epi16(v0, 2), m30))};
      const __m256i mn[2] = {_mm256_and_si256(v1, m3f),
                             _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v2, 4), m0f),
                                             _mm256_and_si256(_mm256_srli_epi16(v1, 2), m30))};
      const Q45Scales scales{d, dmin4, {sc[0], sc[1]}, {mn[0], mn[1]}};
      Q45Granule<kQ5, kBits, T, 0>(p + kCodesAt, p + kHighAt, scales, xq, xd, xs, acc, off);
      prefetch(1);
      Q45Granule<kQ5, kBits, T, 1>(p + kCodesAt, p + kHighAt, scales, xq, xd, xs, acc, off);
      prefetch(2);
      Q45Granule<kQ5, kBits, T, 2>(p + kCodesAt, p + kHighAt, scales, xq, xd, xs, acc, off);
      prefetch(3);
      Q45Granule<kQ5, kBits, T, 3>(p + kCodesAt, p + kHighAt, scales, xq, xd, xs, acc, off);
      for (int t = 0; t < T; ++t) {
        NextSuperBlock<kBits>(xq[t]);
        xd[t] += 8 * 4;
        xs[t] += 8 * 4;
      }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * w.n_out + 8 * grp, _mm256_sub_ps(acc[t], off[t]));
  }
}

// Q6_K rows of a group's super-block, half h (weights 128h .. 128h + 127), quarter q: chunks
// k = 4q .. 4q + 3 of the half's 16 chunks of low nibbles hold 4 weights per row of sub-block
// 8h + q in their low nibbles and of 8h + 4 + q in their high ones; chunk k % 8 of the half's 8
// chunks of high bit pairs holds their top 2 bits (bits 0-1 and 4-5 for k < 8, 2-3 and 6-7 for
// k >= 8). Each sub-block's integer sum, less 32 times its activations' (sums16), is scaled by
// the 8 rows' d * sc and its activation block's d.
// Their products are added to acc: p is the group's super-block, d its 8 rows' d.
template <int kBits, int T, int h, int q>
static inline void Q6Quarter(const uint8_t* p, __m256 d, const TokenActs xq[T], const float* const xd[T],
                             const int32_t* const x16[T], __m256 acc[T]) {
  // After the 8 rows' d: 32 chunks of low nibbles, 16 of high bit pairs, 4 of int8 scales (lane
  // r of chunk c holds scales 4c .. 4c + 3 of row r).
  constexpr int64_t kLowAt = 16, kHighAt = kLowAt + 32 * 32, kScalesAt = kHighAt + 16 * 32;
  const uint8_t* low = p + kLowAt;
  const uint8_t* high = p + kHighAt;
  const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
  Sum a[T], b[T];
  for (int t = 0; t < T; ++t) a[t] = b[t] = Sum{};
  constexpr bool kFirst = q < 2;  // chunks 0..7 of the half
  __m256i cl[2], ch[2];             // chunks k and k + 1
  for (int j = 0; j < 4; j += 2) {
    const int k = 4 * q + j;
    for (int i = 0; i < 2; ++i) {
      const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(low + 32 * (16 * h + k + i)));
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high + 32 * (8 * h + (k + i) % 8)));
      cl[i] = _mm256_or_si256(_mm256_and_si256(l, low4), _mm256_and_si256(Shift16<kFirst ? 4 : 2>(bits), top2));
      ch[i] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), low4),
                              _mm256_and_si256(Shift16<kFirst ? 0 : -2>(bits), top2));
    }
    for (int t = 0; t < T; ++t) {
      AddCodes2<kBits, 63, T == 1 ? 2 : 1>(a[t], cl[0], cl[1], xq[t], 128 * h + 4 * k, j / 2);
      AddCodes2<kBits, 63, T == 1 ? 2 : 1>(b[t], ch[0], ch[1], xq[t], 128 * h + 64 + 4 * k, j / 2);
    }
  }
  __m256i lo[T], hi[T];
  for (int t = 0; t < T; ++t) {
    lo[t] = _mm256_sub_epi32(Total<kBits>(a[t]), _mm256_set1_epi32(32 * x16[t][8 * h + q]));
    hi[t] = _mm256_sub_epi32(Total<kBits>(b[t]), _mm256_set1_epi32(32 * x16[t][8 * h + 4 + q]));
  }
  const __m256i sc_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kScalesAt + 32 * (2 * h)));
  const __m256i sc_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kScalesAt + 32 * (2 * h + 1)));
  const __m256 d_lo = _mm256_mul_ps(d, _mm256_cvtepi32_ps(LaneByteSigned<q>(sc_lo)));
  const __m256 d_hi = _mm256_mul_ps(d, _mm256_cvtepi32_ps(LaneByteSigned<q>(sc_hi)));
  for (int t = 0; t < T; ++t) {  // sub-block 8h + q is in activation block 4h + q / 2, 8h + 4 + q two further
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo[t]), _mm256_mul_ps(d_lo, _mm256_set1_ps(xd[t][4 * (4 * h + q / 2)])),
                             acc[t]);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi[t]), _mm256_mul_ps(d_hi, _mm256_set1_ps(xd[t][4 * (4 * h + 2 + q / 2)])),
                             acc[t]);
  }
}

// Rows [r0, r1) (multiples of 8) of an interleaved Q6_K matrix for tokens t0 .. t0 + T.
template <int T, int kBits>
static void Q6Rows8(const WeightMatrix& w, const Q8Activations& x, const QkActivations& qk, int64_t t0, float* y,
                    int64_t r0, int64_t r1) {
  constexpr int64_t kGroupBlock = 8 * 210;
  const int64_t nsb = w.n_in / 256, nb = w.n_in / kQ8Block;
  const size_t group_bytes = 8 * w.row_bytes;
  const uint8_t* first = w.rows8 + static_cast<size_t>(r0 / 8) * group_bytes;
  const size_t total = static_cast<size_t>((r1 - r0) / 8) * group_bytes;
  prefetch_rows_start(first, total);
  for (int64_t grp = r0 / 8; grp < r1 / 8; ++grp) {
    const uint8_t* p = w.rows8 + static_cast<size_t>(grp) * group_bytes;
    __m256 acc[T];
    TokenActs xq[T];
    const float* xd[T];
    const int32_t* x16[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_setzero_ps();
      xq[t] = TokenAt<kBits>(x, qk, t0 + t);
      xd[t] = x.d4.data() + (t0 + t) * nb * 4;
      x16[t] = qk.sums16.data() + (t0 + t) * (w.n_in / 16);
    }
    for (int64_t sb = 0; sb < nsb; ++sb, p += kGroupBlock) {
      // The super-block kPrefetchBytes ahead, an eighth before each quarter.
      const bool ahead = static_cast<size_t>(p - first) + kPrefetchBytes < total;
      const auto prefetch = [&](int i) {
        if (ahead) prefetch_part_ahead<kGroupBlock, 8, PrefetchTo::kL2ThenL1>(p, i);
      };
      prefetch(0);
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      Q6Quarter<kBits, T, 0, 0>(p, d, xq, xd, x16, acc);
      prefetch(1);
      Q6Quarter<kBits, T, 0, 1>(p, d, xq, xd, x16, acc);
      prefetch(2);
      Q6Quarter<kBits, T, 0, 2>(p, d, xq, xd, x16, acc);
      prefetch(3);
      Q6Quarter<kBits, T, 0, 3>(p, d, xq, xd, x16, acc);
      prefetch(4);
      Q6Quarter<kBits, T, 1, 0>(p, d, xq, xd, x16, acc);
      prefetch(5);
      Q6Quarter<kBits, T, 1, 1>(p, d, xq, xd, x16, acc);
      prefetch(6);
      Q6Quarter<kBits, T, 1, 2>(p, d, xq, xd, x16, acc);
      prefetch(7);
      Q6Quarter<kBits, T, 1, 3>(p, d, xq, xd, x16, acc);
      for (int t = 0; t < T; ++t) {
        NextSuperBlock<kBits>(xq[t]);
        xd[t] += 8 * 4;
        x16[t] += 16;
      }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * w.n_out + 8 * grp, acc[t]);
  }
}

template <int T, int kBits>
static void RowsTyped(const WeightMatrix& w, const Q8Activations& x, const QkActivations& qk, int64_t t0, float* y,
                      int64_t r0, int64_t r1) {
  switch (w.type) {
    case GgmlType::Q4_K: return Q45Rows8<false, T, kBits>(w, x, qk, t0, y, r0, r1);
    case GgmlType::Q5_K: return Q45Rows8<true, T, kBits>(w, x, qk, t0, y, r0, r1);
    default: return Q6Rows8<T, kBits>(w, x, qk, t0, y, r0, r1);
  }
}

template <int T>
static void RowsT(const WeightMatrix& w, const Q8Activations& x, const QkActivations& qk, int64_t t0, float* y,
                  int64_t r0, int64_t r1) {
  if (x.bits == 16) return RowsTyped<T, 16>(w, x, qk, t0, y, r0, r1);
  RowsTyped<T, 8>(w, x, qk, t0, y, r0, r1);
}

// Up to 4 tokens per pass over the rows, so each weight block is decoded once for all of them.
void Rows(const WeightMatrix& w, const Q8Activations& x, const QkActivations& qk, float* y, int64_t r0, int64_t r1) {
  for (int64_t t0 = 0; t0 < x.n_tok; t0 += 4) {
    switch (x.n_tok - t0) {
      case 1: RowsT<1>(w, x, qk, t0, y, r0, r1); break;
      case 2: RowsT<2>(w, x, qk, t0, y, r0, r1); break;
      case 3: RowsT<3>(w, x, qk, t0, y, r0, r1); break;
      default: RowsT<4>(w, x, qk, t0, y, r0, r1); break;
    }
  }
}

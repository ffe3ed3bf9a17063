// SIMD block decoders, compiled once per instruction set (a Highway "-inl" header: include it
// after hwy/highway.h from a file that is re-included by hwy/foreach_target.h).
//
// A decoder turns one "granule" of a weight row -- the smallest run of elements that can be
// decoded on its own: a 32-element block, 64 elements of a Q4_K/Q5_K super-block, half a Q6_K
// super-block -- into f32 vectors of Lanes(DF) elements, handing each to a sink as
// sink(offset_in_granule, vector). The sink either stores the vector (dequantize to a buffer) or
// multiplies it into accumulators (fused matvec), so one decoder serves both. Every decoder does
// the float operations of the scalar reference (dequant.cpp) in the same order, so dequantized
// values are bit-identical to it. (Whether a compiler fuses a multiply and an add into an FMA
// does not matter: in every format the product before an add is exact -- an f16 scale times a
// small integer -- so the fused and unfused results round the same.)

#if defined(SNAPKV_OPS_DEQUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SNAPKV_OPS_DEQUANT_INL_H_
#undef SNAPKV_OPS_DEQUANT_INL_H_
#else
#define SNAPKV_OPS_DEQUANT_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "ops/dequant.h"
#include "ops/fp16.h"

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace dq {

namespace hn = hwy::HWY_NAMESPACE;

// At most 16 f32 lanes: the Q4/Q6 decoders split blocks into runs of 16 elements.
using DF = hn::CappedTag<float, 16>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;
inline constexpr size_t kLanes = hn::MaxLanes(DF());  // fixed-width targets: == Lanes
static_assert(kLanes <= 16 && 16 % kLanes == 0);

// Lanes(DF) bytes, zero-extended to i32 lanes.
HWY_INLINE VI LoadU8(const uint8_t* p) {
  return hn::PromoteTo(DI(), hn::LoadU(hn::Rebind<uint8_t, DF>(), p));
}
HWY_INLINE VI LoadI8(const uint8_t* p) {
  return hn::PromoteTo(DI(), hn::LoadU(hn::Rebind<int8_t, DF>(), reinterpret_cast<const int8_t*>(p)));
}
HWY_INLINE VF ToFloat(VI v) { return hn::ConvertTo(DF(), v); }

// An f16 scale stored at p (any alignment), from kHalfToF32: broadcast, it is one load, where
// vcvtph2ps and a register broadcast take the shuffle port that the 4-bit lookups need.
HWY_INLINE float LoadHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return kHalfToF32[h];
}

// Two consecutive f16 scales at p (d and m of a block).
HWY_INLINE void LoadHalf2(const uint8_t* p, float* a, float* b) {
  *a = LoadHalf(p);
  *b = LoadHalf(p + 2);
}

// Lanes(DF) halves to f32, exactly (subnormals, infinities and NaNs included).
HWY_INLINE VF LoadHalves(const uint8_t* p) {
#if HWY_TARGET <= HWY_AVX2
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(DF(), hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  // Without F16C: rebuild the f32 bit pattern. Highway's emulation maps inf/NaN to finite
  // values, so this is done here.
  const DU du;
  const VU bits = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint16_t, DF>(),
                                              reinterpret_cast<const uint16_t*>(p)));
  const VU sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000u)));
  const VU exp = hn::And(hn::ShiftRight<10>(bits), hn::Set(du, 0x1Fu));
  const VU mant = hn::And(bits, hn::Set(du, 0x3FFu));
  const VU normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(du, 127u - 15u))),
                           hn::ShiftLeft<13>(mant));
  const VU special = hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(mant));
  // mant * 2^-24 is exact in f32.
  const VU subnormal = hn::BitCast(
      du, hn::Mul(hn::ConvertTo(DF(), hn::BitCast(DI(), mant)), hn::Set(DF(), 1.0f / 16777216.0f)));
  VU r = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x1Fu)), special, normal);
  r = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), subnormal, r);
  return hn::BitCast(DF(), hn::Or(r, sign));
#endif
}

HWY_INLINE VF LoadBf16s(const uint8_t* p) {
  const DU du;
  const VU bits = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint16_t, DF>(),
                                              reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(DF(), hn::ShiftLeft<16>(bits));
}

#if HWY_TARGET <= HWY_AVX3
// 4-bit blocks on AVX-512: a block's weights take only 16 values, d * q (+ m) for q < 16, which
// fit one vector. vpermps picks each weight from it by its nibble (it reads only the low 4 bits
// of each index), in place of a mask, a conversion and a multiply(-add) per 16
// weights. Each value is computed as the scalar reference computes it, so the result is the same.
HWY_INLINE __m512 Nibbles() {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// Hands the 32 weights of a block whose 16 bytes of nibbles start at qs (low nibbles first) to
// the sink.
template <class Sink>
HWY_INLINE void NibbleLookup(__m512 values, const uint8_t* qs, Sink& sink) {
  static_assert(kLanes == 16);
  const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  sink(0, VF{_mm512_permutexvar_ps(q, values)});
  sink(16, VF{_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), values)});
}
#endif

// ---------------------------------------------------------------------------------------------
// Decoders. Each has kGranule (elements per Decode call), kGranulesPerBlock, kBlockBytes and
// Decode(row, gi, sink) for granule gi of the row.

struct DecF32 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = 128;  // a granule of 32 floats
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const float* p = reinterpret_cast<const float*>(row + gi * kBlockBytes);
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) sink(j, hn::LoadU(DF(), p + j));
  }
  static float Scalar(const uint8_t* row, int64_t k) {
    float v;
    std::memcpy(&v, row + 4 * k, sizeof(v));
    return v;
  }
};

struct DecF16 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = 64;
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* p = row + gi * kBlockBytes;
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) sink(j, LoadHalves(p + 2 * j));
  }
  static float Scalar(const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, sizeof(h));
    return fp16_to_f32(h);
  }
};

struct DecBF16 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = 64;
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* p = row + gi * kBlockBytes;
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) sink(j, LoadBf16s(p + 2 * j));
  }
  static float Scalar(const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, sizeof(h));
    return bf16_to_f32(h);
  }
};

struct DecQ4_0 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + gi * kBlockBytes;
#if HWY_TARGET <= HWY_AVX3
    // The block's 16 possible values in one vector, picked by nibble (see NibbleLookup).
    const __m512 q_minus_8 = _mm512_sub_ps(Nibbles(), _mm512_set1_ps(8.0f));
    NibbleLookup(_mm512_mul_ps(q_minus_8, _mm512_set1_ps(LoadHalf(b))), b + 2, sink);
#else
    const VF d = hn::Set(DF(), LoadHalf(b));
    const VI mask = hn::Set(DI(), 0xF), eight = hn::Set(DI(), 8);
    HWY_UNROLL(16)
    for (size_t j = 0; j < 16; j += kLanes) {
      const VI q = LoadU8(b + 2 + j);
      sink(j, hn::Mul(ToFloat(hn::Sub(hn::And(q, mask), eight)), d));
      sink(j + 16, hn::Mul(ToFloat(hn::Sub(hn::ShiftRight<4>(q), eight)), d));
    }
#endif
  }
};

struct DecQ4_1 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_1);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + gi * kBlockBytes;
    float sd, sm;
    LoadHalf2(b, &sd, &sm);
#if HWY_TARGET <= HWY_AVX3
    NibbleLookup(_mm512_fmadd_ps(Nibbles(), _mm512_set1_ps(sd), _mm512_set1_ps(sm)), b + 4, sink);
#else
    const VF d = hn::Set(DF(), sd), m = hn::Set(DF(), sm);
    const VI mask = hn::Set(DI(), 0xF);
    HWY_UNROLL(16)
    for (size_t j = 0; j < 16; j += kLanes) {
      const VI q = LoadU8(b + 4 + j);
      sink(j, hn::Add(hn::Mul(ToFloat(hn::And(q, mask)), d), m));
      sink(j + 16, hn::Add(hn::Mul(ToFloat(hn::ShiftRight<4>(q)), d), m));
    }
#endif
  }
};

// Fifth bits of elements [first, first + Lanes) of a Q5 block, as 0 or 16 in i32 lanes.
HWY_INLINE VI Q5HighBits(VU qh, uint32_t first) {
  const DU du;
  const VU bit = hn::And(qh >> hn::Iota(du, first), hn::Set(du, 1u));
  return hn::BitCast(DI(), hn::ShiftLeft<4>(bit));
}

HWY_INLINE uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));  // little-endian host, as the file
  return v;
}

struct DecQ5_0 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_0);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + gi * kBlockBytes;
    const VF d = hn::Set(DF(), LoadHalf(b));
    const VU qh = hn::Set(DU(), LoadU32(b + 2));
    const VI mask = hn::Set(DI(), 0xF), sixteen = hn::Set(DI(), 16);
    HWY_UNROLL(16)
    for (size_t j = 0; j < 16; j += kLanes) {
      const VI q = LoadU8(b + 6 + j);
      const VI lo = hn::Or(hn::And(q, mask), Q5HighBits(qh, static_cast<uint32_t>(j)));
      const VI hi = hn::Or(hn::ShiftRight<4>(q), Q5HighBits(qh, static_cast<uint32_t>(j + 16)));
      sink(j, hn::Mul(ToFloat(hn::Sub(lo, sixteen)), d));
      sink(j + 16, hn::Mul(ToFloat(hn::Sub(hi, sixteen)), d));
    }
  }
};

struct DecQ5_1 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_1);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + gi * kBlockBytes;
    float sd, sm;
    LoadHalf2(b, &sd, &sm);
    const VF d = hn::Set(DF(), sd), m = hn::Set(DF(), sm);
    const VU qh = hn::Set(DU(), LoadU32(b + 4));
    const VI mask = hn::Set(DI(), 0xF);
    HWY_UNROLL(16)
    for (size_t j = 0; j < 16; j += kLanes) {
      const VI q = LoadU8(b + 8 + j);
      const VI lo = hn::Or(hn::And(q, mask), Q5HighBits(qh, static_cast<uint32_t>(j)));
      const VI hi = hn::Or(hn::ShiftRight<4>(q), Q5HighBits(qh, static_cast<uint32_t>(j + 16)));
      sink(j, hn::Add(hn::Mul(ToFloat(lo), d), m));
      sink(j + 16, hn::Add(hn::Mul(ToFloat(hi), d), m));
    }
  }
};

struct DecQ8_0 {
  static constexpr int64_t kGranule = 32, kGranulesPerBlock = 1;
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + gi * kBlockBytes;
    const VF d = hn::Set(DF(), LoadHalf(b));
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) sink(j, hn::Mul(ToFloat(LoadI8(b + 2 + j)), d));
  }
};

// Scale and min multipliers of sub-blocks 2g and 2g + 1 of a Q4_K/Q5_K super-block.
struct KScales {
  float d1, m1, d2, m2;
};
HWY_INLINE KScales LoadKScales(const uint8_t* b, int g) {
  float d, dmin;
  LoadHalf2(b, &d, &dmin);
  uint8_t sc, mn;
  KScales s;
  unpack_scale_min_k4(2 * g, b + 4, &sc, &mn);
  s.d1 = d * static_cast<float>(sc);
  s.m1 = dmin * static_cast<float>(mn);
  unpack_scale_min_k4(2 * g + 1, b + 4, &sc, &mn);
  s.d2 = d * static_cast<float>(sc);
  s.m2 = dmin * static_cast<float>(mn);
  return s;
}

struct DecQ4_K {
  static constexpr int64_t kGranule = 64, kGranulesPerBlock = 4;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + (gi / kGranulesPerBlock) * kBlockBytes;
    const int g = static_cast<int>(gi % kGranulesPerBlock);
    const KScales s = LoadKScales(b, g);
    const VF d1 = hn::Set(DF(), s.d1), m1 = hn::Set(DF(), s.m1);
    const VF d2 = hn::Set(DF(), s.d2), m2 = hn::Set(DF(), s.m2);
    const uint8_t* qs = b + 16 + 32 * g;
    const VI mask = hn::Set(DI(), 0xF);
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) {
      const VI q = LoadU8(qs + j);
      sink(j, hn::Sub(hn::Mul(d1, ToFloat(hn::And(q, mask))), m1));
      sink(j + 32, hn::Sub(hn::Mul(d2, ToFloat(hn::ShiftRight<4>(q))), m2));
    }
  }
};

struct DecQ5_K {
  static constexpr int64_t kGranule = 64, kGranulesPerBlock = 4;
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + (gi / kGranulesPerBlock) * kBlockBytes;
    const int g = static_cast<int>(gi % kGranulesPerBlock);
    const KScales s = LoadKScales(b, g);
    const VF d1 = hn::Set(DF(), s.d1), m1 = hn::Set(DF(), s.m1);
    const VF d2 = hn::Set(DF(), s.d2), m2 = hn::Set(DF(), s.m2);
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48 + 32 * g;
    const VI mask = hn::Set(DI(), 0xF), one = hn::Set(DI(), 1);
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) {
      const VI q = LoadU8(qs + j);
      const VI h = LoadU8(qh + j);
      const VI h1 = hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * g), one));
      const VI h2 = hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * g + 1), one));
      sink(j, hn::Sub(hn::Mul(d1, ToFloat(hn::Add(hn::And(q, mask), h1))), m1));
      sink(j + 32, hn::Sub(hn::Mul(d2, ToFloat(hn::Add(hn::ShiftRight<4>(q), h2))), m2));
    }
  }
};

struct DecQ6_K {
  static constexpr int64_t kGranule = 128, kGranulesPerBlock = 2;
  static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
  template <class Sink>
  static HWY_INLINE void Decode(const uint8_t* row, int64_t gi, Sink& sink) {
    const uint8_t* b = row + (gi / kGranulesPerBlock) * kBlockBytes;
    const int h = static_cast<int>(gi % kGranulesPerBlock);
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
    const float d = LoadHalf(b + 208);
    const VI mask = hn::Set(DI(), 0xF), three = hn::Set(DI(), 3), off = hn::Set(DI(), 32);
    HWY_UNROLL(32)
    for (size_t j = 0; j < 32; j += kLanes) {
      const size_t is = j / 16;  // scales change every 16 elements; kLanes <= 16
      const VI a = LoadU8(ql + j);
      const VI c = LoadU8(ql + j + 32);
      const VI hb = LoadU8(qh + j);
      const VI q1 = hn::Or(hn::And(a, mask), hn::ShiftLeft<4>(hn::And(hb, three)));
      const VI q2 = hn::Or(hn::And(c, mask), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(hb), three)));
      const VI q3 = hn::Or(hn::ShiftRight<4>(a), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(hb), three)));
      const VI q4 = hn::Or(hn::ShiftRight<4>(c), hn::ShiftLeft<4>(hn::ShiftRight<6>(hb)));
      sink(j, hn::Mul(hn::Set(DF(), d * static_cast<float>(sc[is])), ToFloat(hn::Sub(q1, off))));
      sink(j + 32, hn::Mul(hn::Set(DF(), d * static_cast<float>(sc[is + 2])), ToFloat(hn::Sub(q2, off))));
      sink(j + 64, hn::Mul(hn::Set(DF(), d * static_cast<float>(sc[is + 4])), ToFloat(hn::Sub(q3, off))));
      sink(j + 96, hn::Mul(hn::Set(DF(), d * static_cast<float>(sc[is + 6])), ToFloat(hn::Sub(q4, off))));
    }
  }
};

// Calls fn(Decoder()) with the decoder of `type` (which must be supported).
template <class Fn>
HWY_INLINE void WithDecoder(GgmlType type, Fn&& fn) {
  switch (type) {
    case GgmlType::F32: return fn(DecF32());
    case GgmlType::F16: return fn(DecF16());
    case GgmlType::BF16: return fn(DecBF16());
    case GgmlType::Q4_0: return fn(DecQ4_0());
    case GgmlType::Q4_1: return fn(DecQ4_1());
    case GgmlType::Q5_0: return fn(DecQ5_0());
    case GgmlType::Q5_1: return fn(DecQ5_1());
    case GgmlType::Q8_0: return fn(DecQ8_0());
    case GgmlType::Q4_K: return fn(DecQ4_K());
    case GgmlType::Q5_K: return fn(DecQ5_K());
    case GgmlType::Q6_K: return fn(DecQ6_K());
    default: return;
  }
}

// Whether a decoder is for a plain float type, whose rows may end in a partial granule.
template <class D>
inline constexpr bool kIsFloat =
    std::is_same_v<D, DecF32> || std::is_same_v<D, DecF16> || std::is_same_v<D, DecBF16>;

}  // namespace dq
}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#endif  // SNAPKV_OPS_DEQUANT_INL_H_

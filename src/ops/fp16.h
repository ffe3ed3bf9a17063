#pragma once
// Scalar IEEE-754 half (binary16) and bfloat16 <-> float conversions.
//
// These are the exact conversions: f16 -> f32 and bf16 -> f32 are lossless (subnormals, infinities
// and NaN payloads included); f32 -> f16 and f32 -> bf16 round to nearest, ties to even, overflow
// to infinity, and keep NaNs NaN (quiet, with as much of the payload as fits). They are used by the
// scalar reference kernels; SIMD kernels use the hardware instructions, which give the same
// results, and look block scales up in kHalfToF32.
#include <array>
#include <bit>
#include <cstdint>

namespace snapkv {

constexpr float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf or NaN, payload kept
  } else if (exp != 0) {
    bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: value = mant * 2^-24. Shift the leading one up to the implicit-bit position;
    // every shift lowers the exponent by one, starting from that of 2^-14.
    int e = 127 - 15 + 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// fp16_to_f32 of every half, indexed by its bits (256 KiB). A SIMD kernel broadcasts a block
// scale straight from it: one load, where converting takes the shuffle port.
extern const std::array<float, 65536> kHalfToF32;

constexpr uint16_t f32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {  // NaN: keep the top payload bits and force the quiet bit
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  if (abs >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65536: inf
  const int32_t exp = static_cast<int32_t>(abs >> 23) - 127;
  if (exp >= -14) {
    // Normal half. Round the 23-bit mantissa to 10 bits, ties to even; a carry out of the
    // mantissa correctly bumps the exponent (and reaches infinity at 65520 and above).
    const uint32_t base = ((static_cast<uint32_t>(exp + 15) << 10) | ((abs >> 13) & 0x3FFu));
    const uint32_t rest = abs & 0x1FFFu;
    const uint32_t round_up = (rest > 0x1000u || (rest == 0x1000u && (base & 1u))) ? 1u : 0u;
    return static_cast<uint16_t>(sign | (base + round_up));
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: rounds to zero
  // Subnormal half: value / 2^-24, rounded to an integer, ties to even. The full 24-bit
  // significand is shifted right by (-14 - exp) + 13 bits.
  const uint32_t sig = (abs & 0x7FFFFFu) | 0x800000u;
  const int shift = -exp - 14 + 13;  // 14..24
  const uint32_t q = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t round_up = (rest > half || (rest == half && (q & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (q + round_up));  // may carry into the smallest normal
}

constexpr float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

constexpr uint16_t f32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays NaN, quiet
  }
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace snapkv

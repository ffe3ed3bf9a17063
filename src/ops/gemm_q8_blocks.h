#pragma once
// One block of 32 weights of a row, in any type the prefill GEMM takes (gemm_q8.h), as signed
// integer codes with a scale per group and an optional min: weight i = scale[g] * code[i] + min,
// g = i / kGroup. Plain C++, shared by the scalar kernel and the x86 passes' tile unpacking (where
// it is compiled with their instruction sets). The per-type layouts are in dequant.h.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "io/ggml_type.h"
#include "ops/dequant.h"
#include "ops/fp16.h"

namespace snapkv::gemm_block {

struct Block {
  int8_t code[32];
  float scale[2];  // per group: [0] only, or [0] and [1] for Q6_K's groups of 16
  float min;       // 0 for the types without one
};

// Weights per scale: 16 for Q6_K, 32 for the others.
constexpr int group(GgmlType type) { return type == GgmlType::Q6_K ? 16 : 32; }
constexpr bool has_min(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q4_K || type == GgmlType::Q5_K;
}

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return kHalfToF32[h];
}

// Block b (of 32 weights) of a row in its GGUF layout.
template <GgmlType kType>
inline void decode(const uint8_t* row, int64_t b, Block& out) {
  out.min = 0.0f;
  if constexpr (kType == GgmlType::Q4_0 || kType == GgmlType::Q4_1) {
    constexpr int64_t kBytes = kType == GgmlType::Q4_0 ? 18 : 20;
    constexpr int kCodes = kType == GgmlType::Q4_0 ? 2 : 4;
    constexpr int kBias = kType == GgmlType::Q4_0 ? 8 : 0;  // Q4_0: w = d * (c - 8)
    const uint8_t* blk = row + b * kBytes;
    out.scale[0] = half_at(blk);
    if constexpr (kType == GgmlType::Q4_1) out.min = half_at(blk + 2);
    for (int i = 0; i < 16; ++i) {
      out.code[i] = static_cast<int8_t>((blk[kCodes + i] & 0x0F) - kBias);
      out.code[i + 16] = static_cast<int8_t>((blk[kCodes + i] >> 4) - kBias);
    }
  } else if constexpr (kType == GgmlType::Q8_0) {
    const uint8_t* blk = row + b * 34;
    out.scale[0] = half_at(blk);
    std::memcpy(out.code, blk + 2, 32);
  } else if constexpr (kType == GgmlType::Q4_K || kType == GgmlType::Q5_K) {
    // Sub-block j of super-block s; its codes are the low (j even) or high nibbles of 32 bytes.
    constexpr int64_t kBytes = kType == GgmlType::Q4_K ? 144 : 176;
    const uint8_t* sb = row + (b / 8) * kBytes;
    const int j = static_cast<int>(b % 8);
    uint8_t sc, mn;
    unpack_scale_min_k4(j, sb + 4, &sc, &mn);
    out.scale[0] = half_at(sb) * static_cast<float>(sc);
    out.min = -(half_at(sb + 2) * static_cast<float>(mn));
    const uint8_t* qs = sb + (kType == GgmlType::Q4_K ? 16 : 48) + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int i = 0; i < 32; ++i) {
      int c = (qs[i] >> shift) & 0x0F;
      if constexpr (kType == GgmlType::Q5_K) c |= ((sb[16 + i] >> j) & 1) << 4;  // bit j of qh[i]
      out.code[i] = static_cast<int8_t>(c);
    }
  } else {
    static_assert(kType == GgmlType::Q6_K);
    // Block j of 8 in the super-block: half h (128 weights), quarter q within it. Low 4 bits from
    // ql (bytes 0..31 or 32..63 of the half, low or high nibbles), high 2 bits from qh bits 2q.
    const uint8_t* sb = row + (b / 8) * 210;
    const int j = static_cast<int>(b % 8), h = j / 4, q = j % 4;
    const uint8_t* ql = sb + 64 * h + 32 * (q % 2);
    const uint8_t* qh = sb + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(sb + 192 + 8 * h + 2 * q);
    const float d = half_at(sb + 208);
    out.scale[0] = d * static_cast<float>(sc[0]);
    out.scale[1] = d * static_cast<float>(sc[1]);
    const int shift = 4 * (q / 2);
    for (int i = 0; i < 32; ++i) {
      const int c = ((ql[i] >> shift) & 0x0F) | (((qh[i] >> (2 * q)) & 3) << 4);
      out.code[i] = static_cast<int8_t>(c - 32);
    }
  }
}

// Calls fn(std::integral_constant<GgmlType, type>) for a supported type.
template <class Fn>
inline void with_type(GgmlType type, Fn&& fn) {
  switch (type) {
    case GgmlType::Q4_0: return fn(std::integral_constant<GgmlType, GgmlType::Q4_0>());
    case GgmlType::Q4_1: return fn(std::integral_constant<GgmlType, GgmlType::Q4_1>());
    case GgmlType::Q8_0: return fn(std::integral_constant<GgmlType, GgmlType::Q8_0>());
    case GgmlType::Q4_K: return fn(std::integral_constant<GgmlType, GgmlType::Q4_K>());
    case GgmlType::Q5_K: return fn(std::integral_constant<GgmlType, GgmlType::Q5_K>());
    case GgmlType::Q6_K: return fn(std::integral_constant<GgmlType, GgmlType::Q6_K>());
    default: return;
  }
}

}  // namespace snapkv::gemm_block

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
// Our blocks of 32 per block of the GGUF type: 8 in a K-quant's super-block of 256.
constexpr int64_t per_type_block(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ? 8 : 1;
}
constexpr bool has_min(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q4_K || type == GgmlType::Q5_K;
}

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return kHalfToF32[h];
}

// Where block b (of 32 weights) of a row in its GGUF layout keeps its codes: the bytes whose low
// or high nibbles (Q4 types, Q5_K, Q6_K's low 4 bits) or whole values (Q8_0) they are, and for
// Q5_K and Q6_K the bytes holding their high bits. Code i of the block comes from byte i of lo
// (Q4_0 and Q4_1: byte i % 16, low nibbles for i < 16, high for the rest).
struct CodeBytes {
  const uint8_t* lo;
  int lo_shift;  // 0 or 4: the nibble (Q4_K, Q5_K, Q6_K)
  const uint8_t* hi = nullptr;
  int hi_shift = 0;  // Q5_K: the bit (bit j of hi[i]); Q6_K: 2 bits at hi_shift
};

// Block b's scales and min into out, and where its codes are.
template <GgmlType kType>
inline CodeBytes scales(const uint8_t* row, int64_t b, Block& out) {
  out.min = 0.0f;
  if constexpr (kType == GgmlType::Q4_0 || kType == GgmlType::Q4_1) {
    constexpr int64_t kBytes = kType == GgmlType::Q4_0 ? 18 : 20;
    const uint8_t* blk = row + b * kBytes;
    out.scale[0] = half_at(blk);
    if constexpr (kType == GgmlType::Q4_1) out.min = half_at(blk + 2);
    return {blk + (kType == GgmlType::Q4_0 ? 2 : 4), 0};
  } else if constexpr (kType == GgmlType::Q8_0) {
    const uint8_t* blk = row + b * 34;
    out.scale[0] = half_at(blk);
    return {blk + 2, 0};
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
    if constexpr (kType == GgmlType::Q5_K) return {qs, 4 * (j % 2), sb + 16, j};  // bit j of qh[i]
    return {qs, 4 * (j % 2)};
  } else {
    static_assert(kType == GgmlType::Q6_K);
    // Block j of 8 in the super-block: half h (128 weights), quarter q within it. Low 4 bits from
    // ql (bytes 0..31 or 32..63 of the half, low or high nibbles), high 2 bits from qh bits 2q.
    const uint8_t* sb = row + (b / 8) * 210;
    const int j = static_cast<int>(b % 8), h = j / 4, q = j % 4;
    const int8_t* sc = reinterpret_cast<const int8_t*>(sb + 192 + 8 * h + 2 * q);
    const float d = half_at(sb + 208);
    out.scale[0] = d * static_cast<float>(sc[0]);
    out.scale[1] = d * static_cast<float>(sc[1]);
    return {sb + 64 * h + 32 * (q % 2), 4 * (q / 2), sb + 128 + 32 * h, 2 * q};
  }
}

// Block b (of 32 weights) of a row in its GGUF layout.
template <GgmlType kType>
inline void decode(const uint8_t* row, int64_t b, Block& out) {
  const CodeBytes c = scales<kType>(row, b, out);
  for (int i = 0; i < 32; ++i) {
    int code;
    if constexpr (kType == GgmlType::Q4_0 || kType == GgmlType::Q4_1) {
      code = (c.lo[i % 16] >> (i < 16 ? 0 : 4)) & 0x0F;
      if constexpr (kType == GgmlType::Q4_0) code -= 8;  // w = d * (c - 8)
    } else if constexpr (kType == GgmlType::Q8_0) {
      code = static_cast<int8_t>(c.lo[i]);
    } else if constexpr (kType == GgmlType::Q4_K) {
      code = (c.lo[i] >> c.lo_shift) & 0x0F;
    } else if constexpr (kType == GgmlType::Q5_K) {
      code = ((c.lo[i] >> c.lo_shift) & 0x0F) | (((c.hi[i] >> c.hi_shift) & 1) << 4);
    } else {
      code = (((c.lo[i] >> c.lo_shift) & 0x0F) | (((c.hi[i] >> c.hi_shift) & 3) << 4)) - 32;
    }
    out.code[i] = static_cast<int8_t>(code);
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

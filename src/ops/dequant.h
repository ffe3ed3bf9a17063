#pragma once
// GGML quantization block layouts and the scalar reference dequantization.
//
// The structs below are byte-exact images of the blocks in GGUF files (little-endian, no padding);
// f16 fields are raw IEEE half bits. Each block holds block_elems consecutive elements of a row.
// The formulas (and the order of the float operations, so that results are bit-exact) follow the
// ggml reference dequantizers:
//   Q4_0  x = (q - 8) * d                     q: 4 bits, elements 0..15 in the low nibbles of
//                                             qs[0..15], elements 16..31 in the high nibbles
//   Q4_1  x = q * d + m                       same nibble order
//   Q5_0  x = (q - 16) * d                    q = nibble | bit j of qh << 4 (element j)
//   Q5_1  x = q * d + m
//   Q8_0  x = q * d                           q: int8
//   Q4_K  x = (d * sc) * q - (dmin * mn)      256 elements = 8 sub-blocks of 32; 6-bit sc/mn
//                                             packed in 12 bytes; per 64 elements, 32 bytes of qs
//                                             give the low nibbles to the first 32 and the high
//                                             nibbles to the next 32
//   Q5_K  as Q4_K, plus a fifth bit from qh   bit 2i (2i+1) of qh[l] for element 64i+l (64i+32+l)
//   Q6_K  x = (d * sc) * (q - 32)             16 sub-blocks of 16 with int8 scales; 4 low bits in
//                                             ql, 2 high bits in qh (see dequant.cpp)
#include <cstdint>

#include "io/ggml_type.h"

namespace snapkv {

inline constexpr int kQK = 32;    // elements per block of the 32-element types
inline constexpr int kQK_K = 256; // elements per super-block of the K-quants

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j = fifth bit of element j (a little-endian uint32)
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_K {
  uint16_t d;         // scale of the 6-bit sub-block scales
  uint16_t dmin;      // scale of the 6-bit sub-block mins
  uint8_t scales[12]; // 8 scales and 8 mins, 6 bits each (see unpack_scale_min_k4)
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];     // low 4 bits
  uint8_t qh[kQK_K / 4];     // high 2 bits
  int8_t scales[kQK_K / 16]; // one per 16 elements
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// Scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block: sub-blocks 0..3 keep 6 bits
// in the low bits of bytes j and j+4; sub-blocks 4..7 keep their low 4 bits in byte j+4 and
// their top 2 bits in the top bits of bytes j-4 (scale) and j (min).
inline void unpack_scale_min_k4(int j, const uint8_t* scales, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *mn = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Dequantizes the first n elements of a row stored in `type` (src points at the first block) into
// dst. n must be a multiple of the type's block size; throws Error(kUnsupported) for a type this
// engine cannot compute with and Error(kInvalidArgument) for a bad n. Scalar reference: the test
// oracle for every SIMD kernel, and the slow path for odd sizes.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Throws unless type is supported and n is a positive multiple of its block size; `what` names
// the tensor or operation in the message.
void check_row_shape(GgmlType type, int64_t n, const char* what);

}  // namespace snapkv

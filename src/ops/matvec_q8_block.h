#pragma once
// One weight block (Q4_0, Q4_1 or Q8_0) against one block of 32 activations rounded to 8 or 16
// bits, in plain C++: the scalar kernel, the reference, and the odd last block of the SIMD kernels.
// A weight is d * c + m with c its stored code: for Q4_1 c in 0..15 and m stored; for Q4_0
// c in 0..15 and m = -8 d; for Q8_0 c in -128..127 and m = 0. Codes 0..15 of a Q4 block are the
// low nibbles of its 16 bytes, codes 16..31 the high nibbles.
#include <cstdint>
#include <cstring>

#include "io/ggml_type.h"
#include "ops/fp16.h"
#include "ops/matvec_q8.h"

namespace snapkv::q8_block {

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return kHalfToF32[h];
}

constexpr int64_t bytes(GgmlType type) { return type == GgmlType::Q4_1 ? 20 : type == GgmlType::Q4_0 ? 18 : 34; }

// Where a block's codes start, after its scale (and Q4_1's min).
constexpr int64_t codes_at(GgmlType type) { return type == GgmlType::Q4_1 ? 4 : 2; }

inline float scale(const uint8_t* blk) { return half_at(blk); }

inline float offset(GgmlType type, const uint8_t* blk) {
  if (type == GgmlType::Q4_1) return half_at(blk + 2);
  return type == GgmlType::Q4_0 ? -8.0f * half_at(blk) : 0.0f;
}

// Code i (0..31) of the block.
inline int32_t code(GgmlType type, const uint8_t* blk, int i) {
  if (type == GgmlType::Q8_0) return static_cast<int8_t>(blk[codes_at(type) + i]);
  const uint8_t byte = blk[codes_at(type) + i % 16];
  return i < 16 ? byte & 0x0F : byte >> 4;
}

// sum over i of code[i] times activation code i of the block at xq, exactly: 8-bit codes in order,
// 16-bit ones in the order of Q8Activations::q16 (and 32 * 128 * 32767 < 2^31).
template <class Code>
int32_t dot(GgmlType type, const uint8_t* blk, const Code* xq) {
  int32_t s = 0;
  for (int i = 0; i < 32; ++i) s += code(type, blk, i) * xq[sizeof(Code) == 1 ? i : q16_slot(i)];
  return s;
}

// The same with block tb (of all n_tok * n_in / 32) of x, whatever its bits.
inline int32_t dot(GgmlType type, const uint8_t* blk, const Q8Activations& x, int64_t tb) {
  return x.bits == 16 ? dot(type, blk, x.q16.data() + tb * kQ8Block) : dot(type, blk, x.q.data() + tb * kQ8Block);
}

}  // namespace snapkv::q8_block

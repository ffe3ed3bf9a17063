#pragma once
// One K-quant super-block (Q4_K, Q5_K or Q6_K: 256 weights) against the 8 blocks of 32
// activations rounded to 8 or 16 bits that it spans, in plain C++ from the GGUF bytes: the scalar
// kernel and the reference of the integer-activation decode path for these types (matvec_q8.h).
//
// Q4_K and Q5_K: 8 sub-blocks of 32 weights w = d sc_j c - dmin m_j, c the 4-bit (Q5_K: 5-bit)
// code, sc_j and m_j 6-bit; a sub-block is one activation block, so its product is
// d sc_j dx (sum of c q) - dmin m_j (dx sum of q), the last factor 4 * sum4.
// Q6_K: 16 sub-blocks of 16 weights w = d sc_s (c - 32), c 6-bit, sc_s int8; the product of a
// sub-block is d sc_s dx (sum of c q - 32 sum of q) over its 16 activations, dx their block's.
#include <cstdint>

#include "io/ggml_type.h"
#include "ops/dequant.h"
#include "ops/matvec_q8.h"
#include "ops/matvec_q8_block.h"

namespace snapkv::qk_block {

inline bool is_kquant(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
}

inline constexpr int64_t kSuper = 256;

// Code e (0..255) of the super-block, as stored (Q6_K's without its offset of 32).
inline int32_t code(GgmlType type, const uint8_t* blk, int e) {
  if (type == GgmlType::Q6_K) {
    const int h = e / 128, q = (e % 128) / 32, l = e % 32;
    const uint8_t low = blk[64 * h + 32 * (q & 1) + l];
    const uint8_t high = blk[128 + 32 * h + l];
    return ((q < 2 ? low & 0x0F : low >> 4) | (((high >> (2 * q)) & 3) << 4));
  }
  const int j = e / 32, i = e % 32;
  const uint8_t* qs = blk + (type == GgmlType::Q5_K ? 48 : 16) + 32 * (j / 2);
  int32_t c = j % 2 == 0 ? qs[i] & 0x0F : qs[i] >> 4;
  if (type == GgmlType::Q5_K) c |= ((blk[16 + i] >> j) & 1) << 4;
  return c;
}

// Activation code e of the n_in of token t, whatever the bits.
inline int32_t act(const Q8Activations& x, int64_t t, int64_t e) {
  const int64_t i = t * x.n_in + e;
  return x.bits == 16 ? x.q16[static_cast<size_t>((i & ~int64_t{31}) + q16_slot(i & 31))] : x.q[static_cast<size_t>(i)];
}

// Super-block sb of a row (its bytes at blk) times token t's rounded activations, in T (float for
// the scalar kernel, double for the reference); with kMagnitude the sum of the terms' magnitudes
// instead (the scale of the float rounding a kernel may show).
template <class T, bool kMagnitude = false>
T dot(GgmlType type, const uint8_t* blk, const Q8Activations& x, int64_t t, int64_t sb) {
  const auto mag = [](T v) { return kMagnitude && v < 0 ? -v : v; };
  const int64_t first = t * (x.n_in / kQ8Block) + sb * (kSuper / kQ8Block);  // its first activation block
  const auto dx = [&](int e) { return static_cast<T>(x.d4[static_cast<size_t>((first + e / 32) * 4)]); };
  T sum = 0;
  if (type == GgmlType::Q6_K) {
    const T d = static_cast<T>(q8_block::half_at(blk + 208));
    for (int s = 0; s < 16; ++s) {
      int32_t cq = 0, q = 0;
      for (int i = 0; i < 16; ++i) {
        const int32_t a = act(x, t, sb * kSuper + 16 * s + i);
        cq += code(type, blk, 16 * s + i) * a;
        q += a;
      }
      const T sc = static_cast<T>(static_cast<int8_t>(blk[192 + s]));
      sum += mag(d * sc * dx(16 * s) * static_cast<T>(cq - 32 * q));
    }
    return sum;
  }
  const T d = static_cast<T>(q8_block::half_at(blk)), dmin = static_cast<T>(q8_block::half_at(blk + 2));
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, blk + 4, &sc, &m);
    int32_t cq = 0;
    for (int i = 0; i < 32; ++i) cq += code(type, blk, 32 * j + i) * act(x, t, sb * kSuper + 32 * j + i);
    const T sum_x = 4 * static_cast<T>(x.sum4[static_cast<size_t>((first + j) * 4)]);
    sum += mag(d * static_cast<T>(sc) * dx(32 * j) * static_cast<T>(cq)) + mag(-dmin * static_cast<T>(m) * sum_x);
  }
  return sum;
}

}  // namespace snapkv::qk_block

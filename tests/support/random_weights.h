#pragma once
// Random weight matrices in GGUF storage types and random activations, for the kernel tests.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "io/ggml_type.h"
#include "ops/fp16.h"

namespace snapkv::test {

// Random f16 in +-[lo, hi) (so that products stay in a realistic range).
inline uint16_t random_half(std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  const float v = u(rng);
  return f32_to_fp16((rng() & 1) ? -v : v);
}

inline void put_half(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

// n_out rows of n_in elements of `type`: random quants, random but sane f16 scales. With
// `odd_scales`, some scales are subnormal or zero (for the exactness tests of get_row).
inline std::vector<uint8_t> random_matrix(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng,
                                   bool odd_scales = false) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  const size_t row_bytes = ggml_row_bytes(info, static_cast<uint64_t>(n_in));
  std::vector<uint8_t> m(row_bytes * static_cast<size_t>(n_out));
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  auto scale = [&](float lo, float hi) -> uint16_t {
    if (odd_scales) {
      switch (rng() % 8) {
        case 0: return static_cast<uint16_t>(rng() % 0x400);  // subnormal or zero
        case 1: return 0x8000;                                // -0
        default: break;
      }
    }
    return random_half(rng, lo, hi);
  };
  const size_t n_blocks = m.size() / info.block_bytes;
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = m.data() + i * info.block_bytes;
    switch (type) {
      case GgmlType::F32: {
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        const float v = u(rng);
        std::memcpy(b, &v, 4);
        break;
      }
      case GgmlType::F16: put_half(b, odd_scales ? static_cast<uint16_t>(rng()) : random_half(rng, 0.0f, 2.0f)); break;
      case GgmlType::BF16: {
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        const uint16_t h = odd_scales ? static_cast<uint16_t>(rng()) : f32_to_bf16(u(rng));
        put_half(b, h);
        break;
      }
      case GgmlType::Q4_0:
      case GgmlType::Q5_0:
        put_half(b, scale(0.002f, 0.05f));
        break;
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
        put_half(b, scale(0.002f, 0.05f));
        put_half(b + 2, scale(0.0f, 0.2f));
        break;
      case GgmlType::Q8_0: put_half(b, scale(0.0005f, 0.02f)); break;
      case GgmlType::Q4_K:
      case GgmlType::Q5_K:
        put_half(b, scale(0.0005f, 0.005f));
        put_half(b + 2, scale(0.0f, 0.005f));
        break;
      case GgmlType::Q6_K: put_half(b + 208, scale(0.0002f, 0.002f)); break;
      default: ADD_FAILURE() << "unexpected type";
    }
  }
  return m;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = u(rng);
  return v;
}

}  // namespace snapkv::test

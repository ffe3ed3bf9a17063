#pragma once
// Weights for the micro-benchmarks.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "io/ggml_type.h"
#include "ops/fp16.h"

namespace snapkv {

// Random quants with every scale set to a small sane f16 (the values do not affect speed).
inline std::vector<uint8_t> bench_weights(GgmlType type, int64_t n_in, int64_t n_out) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  std::vector<uint8_t> m(ggml_row_bytes(info, static_cast<uint64_t>(n_in)) * static_cast<size_t>(n_out));
  std::mt19937 rng(42);
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  const uint16_t s = f32_to_fp16(0.01f);
  for (size_t off = 0; off + info.block_bytes <= m.size(); off += info.block_bytes) {
    uint8_t* b = m.data() + off;
    switch (type) {
      case GgmlType::F32: {
        const float v = static_cast<float>(rng() % 1000) * 1e-3f;
        std::memcpy(b, &v, 4);
        break;
      }
      case GgmlType::BF16: {
        const uint16_t h = 0x3c23;  // 0.01 as bf16
        std::memcpy(b, &h, 2);
        break;
      }
      case GgmlType::F16: case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: std::memcpy(b, &s, 2); break;
      case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K:
        std::memcpy(b, &s, 2);
        std::memcpy(b + 2, &s, 2);
        break;
      case GgmlType::Q6_K: std::memcpy(b + 208, &s, 2); break;
      default: break;
    }
  }
  return m;
}

}  // namespace snapkv

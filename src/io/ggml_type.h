#pragma once
// Tensor element types as numbered in GGUF files (the ggml_type enum), with their block geometry.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace snapkv {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ4_NL = 20, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
  bool supported;        // this engine can compute with it
};

// Geometry of a type id read from a file; nullopt for ids we do not know at all.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType type);

// Bytes of one row of n elements (n must be a multiple of the block size).
inline size_t ggml_row_bytes(const GgmlTypeInfo& t, uint64_t n) {
  return static_cast<size_t>(n / t.block_elems) * t.block_bytes;
}

}  // namespace snapkv

#include "io/ggml_type.h"

#include <array>

#include "util/error.h"

namespace snapkv {
namespace {

// Block sizes from the GGUF/ggml specification. Types marked unsupported are still listed so
// that a file using them is parsed and reported with the tensor named, instead of rejected
// as corrupt.
constexpr std::array kTypes = {
    GgmlTypeInfo{GgmlType::F32, "F32", 1, 4, true},
    GgmlTypeInfo{GgmlType::F16, "F16", 1, 2, true},
    GgmlTypeInfo{GgmlType::Q4_0, "Q4_0", 32, 18, true},
    GgmlTypeInfo{GgmlType::Q4_1, "Q4_1", 32, 20, true},
    GgmlTypeInfo{GgmlType::Q5_0, "Q5_0", 32, 22, true},
    GgmlTypeInfo{GgmlType::Q5_1, "Q5_1", 32, 24, true},
    GgmlTypeInfo{GgmlType::Q8_0, "Q8_0", 32, 34, true},
    GgmlTypeInfo{GgmlType::Q8_1, "Q8_1", 32, 36, false},
    GgmlTypeInfo{GgmlType::Q2_K, "Q2_K", 256, 84, false},
    GgmlTypeInfo{GgmlType::Q3_K, "Q3_K", 256, 110, false},
    GgmlTypeInfo{GgmlType::Q4_K, "Q4_K", 256, 144, true},
    GgmlTypeInfo{GgmlType::Q5_K, "Q5_K", 256, 176, true},
    GgmlTypeInfo{GgmlType::Q6_K, "Q6_K", 256, 210, true},
    GgmlTypeInfo{GgmlType::Q8_K, "Q8_K", 256, 292, false},
    GgmlTypeInfo{GgmlType::IQ4_NL, "IQ4_NL", 32, 18, false},
    GgmlTypeInfo{GgmlType::I8, "I8", 1, 1, false},
    GgmlTypeInfo{GgmlType::I16, "I16", 1, 2, false},
    GgmlTypeInfo{GgmlType::I32, "I32", 1, 4, false},
    GgmlTypeInfo{GgmlType::I64, "I64", 1, 8, false},
    GgmlTypeInfo{GgmlType::F64, "F64", 1, 8, false},
    GgmlTypeInfo{GgmlType::BF16, "BF16", 1, 2, true},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t;
  }
  fail(ErrorKind::kInternal, "unknown ggml type {}", static_cast<uint32_t>(type));
}

}  // namespace snapkv

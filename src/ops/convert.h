#pragma once
// Rows of f32 to IEEE half, as the KV cache stores them: the same results as f32_to_fp16
// (ops/fp16.h) element by element, with vcvtps2ph where the CPU has F16C.
#include <cstdint>

namespace snapkv {

// The n halves f32_to_fp16(src[i]), one after another (2n bytes, any alignment), at dst.
void f32_to_fp16_row(const float* src, void* dst, int64_t n);

}  // namespace snapkv

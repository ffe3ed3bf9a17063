#include "ops/fp16.h"

namespace snapkv {
namespace {

std::array<float, 65536> MakeHalfToF32() {
  std::array<float, 65536> t{};
  for (uint32_t h = 0; h < t.size(); ++h) t[h] = fp16_to_f32(static_cast<uint16_t>(h));
  return t;
}

}  // namespace

// Filled before main; the kernels that read it run only after.
const std::array<float, 65536> kHalfToF32 = MakeHalfToF32();

}  // namespace snapkv

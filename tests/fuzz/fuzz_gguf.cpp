// libFuzzer target: arbitrary bytes through the GGUF reader and, when they parse, through every
// metadata getter and the model loader. Any outcome but success or snapkv::Error is a bug.
#include <cstddef>
#include <cstdint>

#include "io/gguf.h"
#include "model/model.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snapkv;
  try {
    const auto f = GgufFile::parse(data, size, "fuzz");
    for (const auto& [key, v] : f->metadata()) {
      try {
        switch (v.type) {
          case GgufValueType::kString: (void)f->get_string(key); break;
          case GgufValueType::kArray:
            if (v.elem_type == GgufValueType::kString) (void)f->get_string_array(key);
            else if (v.elem_type == GgufValueType::kF32 || v.elem_type == GgufValueType::kF64) (void)f->get_float_array(key);
            else (void)f->get_int_array(key);
            break;
          case GgufValueType::kF32: case GgufValueType::kF64: (void)f->get_float(key); break;
          default: (void)f->get_uint(key); break;
        }
      } catch (const Error&) {
      }
    }
    // Touch every tensor byte the reader vouched for.
    uint8_t acc = 0;
    for (const GgufTensor& t : f->tensors()) {
      if (t.n_bytes > 0) acc ^= t.data[0] ^ t.data[t.n_bytes - 1];
    }
    (void)acc;
    (void)load_decoder(*f);
  } catch (const Error&) {
  }
  return 0;
}

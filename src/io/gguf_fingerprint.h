#pragma once
// Fingerprints of a GGUF file, so that state saved with one model (context files) is never loaded
// into another: the model's covers every metadata value outside tokenizer.*, every tensor's name,
// type and shape, and the first and last bytes of every tensor's data (another quantization or
// another fine-tune of the same shape differs there); the tokenizer's covers tokenizer.*.
// Call before the loader releases the file's pages.
#include <cstdint>

#include "io/gguf.h"

namespace snapkv {

uint64_t gguf_model_fingerprint(const GgufFile& f);
uint64_t gguf_tokenizer_fingerprint(const GgufFile& f);

}  // namespace snapkv

#pragma once
// Small enums shared by the API's option structs and the engine.
#include <cstdint>
#include <string>

namespace snapkv {

// Element type of the stored keys and values.
enum class KvType : uint8_t { kF32, kF16, kBF16 };
// "f32", "f16", "bf16" and back; parse returns false for anything else.
const char* kv_type_name(KvType t);
bool parse_kv_type(const std::string& s, KvType& out);

// What matrix products multiply Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K weights by (the CLI's
// --decode-activations). kF32 keeps the activations in f32 (results agree with a double reference
// to rounding). kQ8 rounds each block of 32 activations to 8 bits first, as llama.cpp does, and
// multiplies in integers; kQ16 rounds to 16 bits (an error of up to max|x| / 65534 of the block).
// Decode: calls of at most 8 tokens whose weights are all of those types (kQ16, and kQ8 for the
// K-quants, with the interleaved copies the model makes). Prefill: the matrices of those types, on a
// CPU with AVX-512 VNNI (kQ8 also with AVX2, but Q8_0). Any other product runs as kF32.
enum class MatmulActivations { kF32, kQ8, kQ16 };

// Entries a press kept in one layer, over all its KV heads, out of the entries it was given.
struct LayerKept {
  int64_t kept = 0, total = 0;
};

}  // namespace snapkv

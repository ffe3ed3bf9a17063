#include "io/gguf_fingerprint.h"

#include <algorithm>
#include <bit>

#include "util/hash.h"

namespace snapkv {
namespace {

constexpr std::string_view kTokenizerPrefix = "tokenizer.";
constexpr uint64_t kSampleBytes = 64;  // of each end of each tensor's data

void add_value(Hash64& h, const GgufValue& v) {
  h.add_u64(static_cast<uint64_t>(v.type)).add_u64(static_cast<uint64_t>(v.i)).add_u64(v.u);
  h.add_u64(std::bit_cast<uint64_t>(v.f)).add(v.str);
  h.add_u64(static_cast<uint64_t>(v.elem_type)).add_u64(v.count);
  if (v.data != nullptr) h.add(v.data, v.count * gguf_scalar_size(v.elem_type));
  for (const std::string_view s : v.strs) h.add(s);
  for (const GgufValue& item : v.items) add_value(h, item);
}

uint64_t metadata_hash(const GgufFile& f, bool tokenizer, Hash64 h) {
  for (const auto& [key, value] : f.metadata()) {
    if (key.starts_with(kTokenizerPrefix) != tokenizer) continue;
    h.add(key);
    add_value(h, value);
  }
  return h.digest();
}

}  // namespace

uint64_t gguf_model_fingerprint(const GgufFile& f) {
  Hash64 h(1);
  h.add_u64(metadata_hash(f, false, Hash64(2)));
  for (const GgufTensor& t : f.tensors()) {
    h.add(t.name).add_u64(static_cast<uint64_t>(t.type));
    for (const int64_t n : t.ne) h.add_u64(static_cast<uint64_t>(n));
    const uint64_t n = std::min(t.n_bytes, kSampleBytes);
    if (n > 0) h.add(t.data, n).add(t.data + t.n_bytes - n, n);
  }
  return h.digest();
}

uint64_t gguf_tokenizer_fingerprint(const GgufFile& f) { return metadata_hash(f, true, Hash64(3)); }

}  // namespace snapkv

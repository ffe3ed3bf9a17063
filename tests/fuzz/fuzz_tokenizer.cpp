// libFuzzer target: arbitrary bytes through the default model's tokenizer, with and without
// special-token parsing, then back through decode. Byte-level BPE must reproduce any valid UTF-8
// text exactly when special tokens are not parsed, unless a byte has no token in the vocabulary
// (SmolLM2 lacks a few control bytes; they become the unknown token, as in HF).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "io/tokenizer_unicode.h"
#include "util/error.h"

namespace {
struct Loaded {
  std::unique_ptr<snapkv::GgufFile> file;
  std::unique_ptr<snapkv::Tokenizer> tok;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    const char* dir = std::getenv("SNAPKV_SOURCE_DIR");
    const std::string path = std::string(dir ? dir : ".") + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    Loaded r;
    r.file = snapkv::GgufFile::open(path);
    r.tok = snapkv::Tokenizer::from_gguf(*r.file);
    return r;
  }();
  return l;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const snapkv::Tokenizer& tok = *loaded().tok;
  try {
    const auto with_special = tok.encode(text, /*add_bos=*/true, /*parse_special=*/true);
    (void)tok.decode(with_special, /*render_special=*/true);
    const auto plain = tok.encode(text, /*add_bos=*/false, /*parse_special=*/false);
    const std::string back = tok.decode(plain);
    const bool has_unknown = std::find(plain.begin(), plain.end(), tok.unk_id()) != plain.end();
    if (snapkv::tokenizer_detail::utf8_valid(text) && !has_unknown && back != text) std::abort();
    for (int32_t id : plain) (void)tok.token_piece(id);
  } catch (const snapkv::Error&) {
  }
  return 0;
}

#include "snapkv/gguf_summary.h"

#include <fmt/format.h>

#include "io/gguf.h"
#include "snapkv/chat.h"

namespace snapkv {
namespace {

std::string value_text(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kString: {
      std::string s(v.str.substr(0, 80));
      for (char& c : s) c = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
      return v.str.size() > 80 ? fmt::format("\"{}...\" ({} bytes)", s, v.str.size()) : fmt::format("\"{}\"", s);
    }
    case GgufValueType::kArray:
      return fmt::format("[{} x {}]", v.count, gguf_value_type_name(v.elem_type));
    case GgufValueType::kBool:
      return v.u ? "true" : "false";
    case GgufValueType::kF32:
      return fmt::format("{:.7g}", v.f);
    case GgufValueType::kF64:
      return fmt::format("{}", v.f);
    default:
      return v.type == GgufValueType::kU64 ? fmt::format("{}", v.u) : fmt::format("{}", v.i);
  }
}

}  // namespace

GgufSummary read_gguf_summary(const std::string& path) {
  const auto f = GgufFile::open(path, GgufFile::Memory::kMapped);  // metadata only: nothing read in advance
  GgufSummary s;
  s.path = path;
  s.file_size = f->file_size();
  s.version = f->version();
  s.data_offset = f->data_offset();
  s.alignment = f->alignment();
  s.arch = f->get_string("general.architecture", "?");
  s.name = f->get_string("general.name", "?");
  for (const auto& [key, v] : f->metadata()) s.metadata.emplace_back(key, value_text(v));
  if (f->has("tokenizer.ggml.tokens")) {
    const auto& tokens = f->get_string_array("tokenizer.ggml.tokens");
    for (const char* k : {"bos", "eos", "eot", "unknown", "padding"}) {
      const std::string key = fmt::format("tokenizer.ggml.{}_token_id", k);
      if (!f->has(key)) continue;
      const uint64_t id = f->get_uint(key);
      s.special_tokens.emplace_back(k, fmt::format("{} = \"{}\"", id, id < tokens.size() ? tokens[id] : "?"));
    }
  }
  if (f->has("tokenizer.chat_template")) {
    s.chat_template = chat_template_name(detect_chat_template(f->get_string("tokenizer.chat_template")));
  }
  for (const GgufTensor& t : f->tensors()) {
    GgufTensorSummary ts;
    ts.name = t.name;
    ts.type = ggml_type_info(t.type).name;
    ts.shape.assign(t.ne.begin(), t.ne.begin() + t.n_dims);
    ts.bytes = t.n_bytes;
    s.tensors.push_back(std::move(ts));
  }
  return s;
}

}  // namespace snapkv

// snapkv inspect: what a GGUF file holds, read from its header alone, so it also works for
// architectures and types the engine cannot run.
#include <fmt/core.h>

#include <map>

#include "commands.h"
#include "snapkv/chat.h"
#include "io/gguf.h"
#include "util/memory.h"

namespace snapkv::cli {
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

int inspect(const std::string& path, bool all_tensors) {
  const auto f = GgufFile::open(path, GgufFile::Memory::kMapped);  // metadata only: nothing read in advance
  fmt::print("file: {} ({}, GGUF v{}, {} metadata keys, {} tensors, data at {}, alignment {})\n", path,
             format_bytes(static_cast<double>(f->file_size())), f->version(), f->metadata().size(),
             f->tensors().size(), f->data_offset(), f->alignment());
  const std::string arch(f->get_string("general.architecture", "?"));
  fmt::print("architecture: {}  name: {}\n", arch, f->get_string("general.name", "?"));

  fmt::print("\nhyper-parameters:\n");
  for (const auto& [key, v] : f->metadata()) {
    if (key.starts_with(arch + ".")) fmt::print("  {:<44} {}\n", key.substr(arch.size() + 1), value_text(v));
  }
  fmt::print("\ntokenizer:\n");
  for (const auto& [key, v] : f->metadata()) {
    if (key.starts_with("tokenizer.")) fmt::print("  {:<44} {}\n", key.substr(10), value_text(v));
  }
  if (f->has("tokenizer.ggml.tokens")) {
    const auto& tokens = f->get_string_array("tokenizer.ggml.tokens");
    for (const char* k : {"bos", "eos", "eot", "unknown", "padding"}) {
      const std::string key = fmt::format("tokenizer.ggml.{}_token_id", k);
      if (!f->has(key)) continue;
      const uint64_t id = f->get_uint(key);
      fmt::print("  {:<44} {} = \"{}\"\n", fmt::format("{} token", k), id, id < tokens.size() ? tokens[id] : "?");
    }
  }
  if (f->has("tokenizer.chat_template")) {
    fmt::print("  {:<44} {}\n", "chat template (detected)",
               chat_template_name(detect_chat_template(f->get_string("tokenizer.chat_template"))));
  }

  fmt::print("\ntensors:\n  {:<36} {:<7} {:>22} {:>12}\n", "name", "type", "shape", "bytes");
  struct Usage {
    size_t n = 0, bytes = 0;
  };
  std::map<std::string_view, Usage> by_type;
  size_t total = 0, shown = 0;
  for (const GgufTensor& t : f->tensors()) {
    const auto& info = ggml_type_info(t.type);
    by_type[info.name].n++;
    by_type[info.name].bytes += t.n_bytes;
    total += t.n_bytes;
    // Layer tensors repeat per block; show block 0 (and the rest with --all).
    if (!all_tensors && t.name.starts_with("blk.") && !t.name.starts_with("blk.0.")) continue;
    std::string shape = fmt::format("{}", t.ne[0]);
    for (int d = 1; d < t.n_dims; ++d) shape += fmt::format(" x {}", t.ne[d]);
    fmt::print("  {:<36} {:<7} {:>22} {:>12}\n", t.name, info.name, shape, t.n_bytes);
    ++shown;
  }
  if (shown < f->tensors().size()) fmt::print("  ... {} more (--all shows every tensor)\n", f->tensors().size() - shown);

  fmt::print("\nmemory by type:\n");
  for (const auto& [name, u] : by_type) {
    fmt::print("  {:<7} {:>5} tensors {:>12} {:5.1f} %\n", name, u.n, format_bytes(static_cast<double>(u.bytes)),
               100.0 * static_cast<double>(u.bytes) / static_cast<double>(std::max<size_t>(total, 1)));
  }
  fmt::print("  total   {:>5} tensors {:>12}\n", f->tensors().size(), format_bytes(static_cast<double>(total)));
  return 0;
}

}  // namespace

Action add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  app.add_option("file", *path, "GGUF file")->required();
  app.add_flag("--all", *all, "list every tensor, not only the first block's");
  return [path, all] { return inspect(*path, *all); };
}

}  // namespace snapkv::cli

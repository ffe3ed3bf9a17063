// snapkv inspect: what a GGUF file holds, read from its header alone, so it also works for
// architectures and types the engine cannot run; or what a context file (snapkv compress) holds.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "commands.h"
#include "snapkv/context.h"
#include "snapkv/gguf_summary.h"
#include "snapkv/memory.h"
#include "snapkv/model.h"

namespace snapkv::cli {
namespace {

bool is_context_file(const std::string& path) {
  char magic[8] = {};
  std::ifstream(path, std::ios::binary).read(magic, sizeof magic);
  return std::string_view(magic, sizeof magic) == "SNAPKVCX";
}

int inspect_context_file(const std::string& path) {
  const ContextInfo c = inspect_context(path);  // validates every section
  fmt::print("file: {} ({}, snapkv context file, checksums verified)\n", path, format_bytes(c.file_bytes));
  fmt::print("made with: {}\ntokens: {}\nKV cache: {}, {} entries, {}\n", c.model_name, c.n_tokens, c.kv_type,
             c.entries, c.pressed ? "pressed: " + c.press : "whole (pressed per question with --kv-press)");
  fmt::print("questions: {}\n", c.chat ? "through the chat template" : "plain text after a blank line");
  return 0;
}

int inspect(const std::string& path, bool all_tensors) {
  if (is_context_file(path)) return inspect_context_file(path);
  const GgufSummary f = read_gguf_summary(path);
  fmt::print("file: {} ({}, GGUF v{}, {} metadata keys, {} tensors, data at {}, alignment {})\n", path,
             format_bytes(static_cast<double>(f.file_size)), f.version, f.metadata.size(), f.tensors.size(),
             f.data_offset, f.alignment);
  const std::vector<std::string> supported = supported_architectures();
  const bool runs = std::find(supported.begin(), supported.end(), f.arch) != supported.end();
  fmt::print("architecture: {}  name: {}\n", f.arch, f.name);
  fmt::print("runs here: {} (supported architectures: {})\n", runs ? "yes" : "no", fmt::join(supported, ", "));

  fmt::print("\nhyper-parameters:\n");
  for (const auto& [key, v] : f.metadata) {
    if (key.starts_with(f.arch + ".")) fmt::print("  {:<44} {}\n", key.substr(f.arch.size() + 1), v);
  }
  fmt::print("\ntokenizer:\n");
  for (const auto& [key, v] : f.metadata) {
    if (key.starts_with("tokenizer.")) fmt::print("  {:<44} {}\n", key.substr(10), v);
  }
  for (const auto& [label, v] : f.special_tokens) fmt::print("  {:<44} {}\n", label + " token", v);
  if (!f.chat_template.empty()) fmt::print("  {:<44} {}\n", "chat template (detected)", f.chat_template);

  fmt::print("\ntensors:\n  {:<36} {:<7} {:>22} {:>12}\n", "name", "type", "shape", "bytes");
  struct Usage {
    size_t n = 0, bytes = 0;
  };
  std::map<std::string, Usage> by_type;
  size_t total = 0, shown = 0;
  for (const GgufTensorSummary& t : f.tensors) {
    by_type[t.type].n++;
    by_type[t.type].bytes += t.bytes;
    total += t.bytes;
    // Layer tensors repeat per block; show block 0 (and the rest with --all).
    if (!all_tensors && t.name.starts_with("blk.") && !t.name.starts_with("blk.0.")) continue;
    fmt::print("  {:<36} {:<7} {:>22} {:>12}\n", t.name, t.type, fmt::format("{}", fmt::join(t.shape, " x ")), t.bytes);
    ++shown;
  }
  if (shown < f.tensors.size()) fmt::print("  ... {} more (--all shows every tensor)\n", f.tensors.size() - shown);

  fmt::print("\nmemory by type:\n");
  for (const auto& [name, u] : by_type) {
    fmt::print("  {:<7} {:>5} tensors {:>12} {:5.1f} %\n", name, u.n, format_bytes(static_cast<double>(u.bytes)),
               100.0 * static_cast<double>(u.bytes) / static_cast<double>(std::max<size_t>(total, 1)));
  }
  fmt::print("  total   {:>5} tensors {:>12}\n", f.tensors.size(), format_bytes(static_cast<double>(total)));
  return 0;
}

}  // namespace

Action add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  app.add_option("file", *path, "GGUF file, or a context file from snapkv compress")->required();
  app.add_flag("--all", *all, "list every tensor, not only the first block's");
  return [path, all] { return inspect(*path, *all); };
}

}  // namespace snapkv::cli

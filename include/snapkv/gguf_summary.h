#pragma once
// What a GGUF file holds, read from its header alone (nothing is loaded), so it also works for
// architectures and tensor types the engine cannot run: `snapkv inspect`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snapkv {

struct GgufTensorSummary {
  std::string name;
  std::string type;              // ggml type name: "q4_K", "f16", ...
  std::vector<int64_t> shape;    // ne[0], ne[1], ... (ne[0] is the row length)
  size_t bytes = 0;
};

struct GgufSummary {
  std::string path;
  size_t file_size = 0;
  uint32_t version = 0;
  uint64_t data_offset = 0, alignment = 0;
  std::string arch, name;  // general.architecture, general.name ("?" when missing)
  // Every metadata key with its value as one line of text (long strings cut, arrays as
  // "[n x type]"), in file order.
  std::vector<std::pair<std::string, std::string>> metadata;
  // bos / eos / eot / unknown / padding tokens present: (label, "id = \"text\"").
  std::vector<std::pair<std::string, std::string>> special_tokens;
  std::string chat_template;  // the detected template's name; empty without tokenizer.chat_template
  std::vector<GgufTensorSummary> tensors;
};

// Error(kBadFile) for a missing, truncated or corrupt file.
GgufSummary read_gguf_summary(const std::string& path);

}  // namespace snapkv

#pragma once
// Context files: a sequence's state after a prefill, full or pressed, saved so that later runs
// (other processes, other machines with the same model) answer questions about it without
// prefilling it again. The format (docs/context-files.md):
//
//   "SNAPKVCX"  u32 version  u32 n_sections
//   n_sections x { u32 tag  u32 0  u64 size  u64 checksum  payload[size] }
//
// in this order: META (fingerprints, shapes, press), TOKENS, LOGITS (the next token's), WINDOW
// (only when the cache is whole: each layer's last queries, for a press later) and one KV section
// per layer (per stored head: its count, positions, key rows and value rows). Little-endian. Every
// section carries a 64-bit checksum of its payload; the reader checks every tag, size, count,
// position and checksum before anything is used, and the file must end where the last section
// does. Writes go to a temporary file in the same directory, fsync'ed and renamed over the target,
// so a crash leaves the old file or the new one, never a mix.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace snapkv {

inline constexpr uint32_t kContextFileVersion = 1;

struct ContextMeta {
  uint64_t model_fingerprint = 0, tokenizer_fingerprint = 0;
  std::string model_name;  // for error messages ("made with ...")
  KvType kv_type = KvType::kF16;
  int n_layer = 0, n_head_kv = 0, replicate = 1, head_dim = 0, n_head = 0, n_vocab = 0;
  bool pressed = false;  // a press selected the entries (else every position is in every head)
  std::string press;     // PressConfig::describe() of what made it
  // Text around a question asked on this context (after a document: a blank line before it, the
  // chat template's end of the user turn and the assistant's header after it; after a chat turn:
  // the template's next user turn around it), and whether special tokens in them are parsed.
  std::string question_prefix, question_suffix;
  bool chat = false;
};

// Per layer, the last queries a press's observation window reads: [n, n_head, head_dim] and
// their positions.
struct WindowQueries {
  std::vector<float> q;
  std::vector<int32_t> pos;
};

// The checksum a section header carries for its payload (the fuzzer re-seals mutated files with it).
uint64_t context_section_checksum(const uint8_t* payload, size_t size);

// Writes atomically; returns the bytes written. windows: empty, or one per layer.
// Error(kBadFile) naming the path when it cannot be written (the target is then unchanged).
size_t write_context_file(const std::string& path, const ContextMeta& meta, std::span<const int32_t> tokens,
                          std::span<const float> logits, std::span<const WindowQueries> windows,
                          const KvCache& kv);

// The same bytes in memory (a shared context store's value).
std::vector<uint8_t> encode_context(const ContextMeta& meta, std::span<const int32_t> tokens,
                                    std::span<const float> logits, std::span<const WindowQueries> windows,
                                    const KvCache& kv);

class ContextFile {
 public:
  // Maps and validates the file. Error(kBadFile) naming the path and the problem.
  static std::unique_ptr<ContextFile> open(const std::string& path);
  // Validates a buffer the caller keeps alive (tests and the fuzzer).
  static std::unique_ptr<ContextFile> parse(const uint8_t* data, size_t size, std::string label);
  ~ContextFile();
  ContextFile(const ContextFile&) = delete;
  ContextFile& operator=(const ContextFile&) = delete;

  const std::string& label() const { return label_; }
  size_t size() const { return size_; }
  const ContextMeta& meta() const { return meta_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<float>& logits() const { return logits_; }
  const std::vector<WindowQueries>& windows() const { return windows_; }  // empty when not saved
  int64_t entries() const;
  // The cache it holds (the entries are copied out of the mapping).
  KvCache cache(std::vector<int32_t> layer_windows) const;

 private:
  ContextFile() = default;
  void parse_all();

  struct HeadRows {
    std::vector<int32_t> pos;
    const uint8_t* keys = nullptr;
    const uint8_t* values = nullptr;
  };
  std::string label_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  ContextMeta meta_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
  std::vector<WindowQueries> windows_;
  std::vector<std::vector<HeadRows>> layers_;  // [n_layer][n_head_kv * replicate]
};

}  // namespace snapkv

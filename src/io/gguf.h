#pragma once
// GGUF reader (versions 2 and 3) over the file read into memory (or mapped, for metadata). Every
// count, offset and size is checked against the file before it is used; a bad file raises
// Error(kBadFile) naming the problem. Strings and tensor data are views into that memory and live
// as long as the GgufFile.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/ggml_type.h"

namespace snapkv {

enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);
// Bytes of one numeric element; 0 for strings and arrays.
size_t gguf_scalar_size(GgufValueType t);

struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  // Scalars: integers in i (signed) or u (unsigned), floats in f, bool in u.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string_view str;
  // Arrays: element type and count; numeric elements stay in the file (data), strings are
  // indexed (strs), nested arrays are parsed (items).
  GgufValueType elem_type = GgufValueType::kU8;
  uint64_t count = 0;
  const uint8_t* data = nullptr;
  std::vector<std::string_view> strs;
  std::vector<GgufValue> items;

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
};

struct GgufTensor {
  std::string_view name;
  GgmlType type;
  int n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  uint64_t offset = 0;                    // relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Where the file's bytes live: read into huge pages (to run the model: decode streams every
  // weight once per token), mapped read-only (to look at metadata: nothing is read that is not
  // used), or a buffer the caller keeps alive (parse).
  enum class Memory { kHugePages, kMapped, kCallers };
  // Reads (or maps) and parses the file; throws Error(kBadFile) for anything malformed.
  static std::unique_ptr<GgufFile> open(const std::string& path, Memory memory = Memory::kHugePages);
  // Parses a buffer the caller keeps alive (used by tests and the fuzzer).
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size, std::string label);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t file_size() const { return size_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: the key must exist with a compatible type, else Error(kBadFile) naming it.
  uint64_t get_uint(std::string_view key) const;
  uint64_t get_uint(std::string_view key, uint64_t fallback) const;
  double get_float(std::string_view key) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::string_view get_string(std::string_view key) const;
  std::string_view get_string(std::string_view key, std::string_view fallback) const;
  const std::vector<std::string_view>& get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  // A mapped file's whole pages within [p, p + n), which must lie in the file, leave this
  // process's memory; they come back from the file if read again. Nothing happens for a file read
  // into memory, whose bytes have no other copy. For weights the model has copied.
  void release(const uint8_t* p, size_t n) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  // Like find_tensor, but Error(kBadFile) naming the tensor when it is missing.
  const GgufTensor& tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  void parse_all();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  Memory memory_ = Memory::kCallers;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kv_;
  std::map<std::string_view, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string_view, size_t, std::less<>> tensor_index_;
};

}  // namespace snapkv

#pragma once
// Builds GGUF files in memory for tests: well-formed ones, and corrupt ones by editing the bytes.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv::test {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  void add_u32(std::string_view key, uint32_t v) { kv(key, 4); put(v); }
  void add_i32(std::string_view key, int32_t v) { kv(key, 5); put(v); }
  void add_f32(std::string_view key, float v) { kv(key, 6); put(v); }
  void add_bool(std::string_view key, bool v) { kv(key, 7); put(static_cast<uint8_t>(v)); }
  void add_string(std::string_view key, std::string_view v) { kv(key, 8); str(v); }
  void add_u64(std::string_view key, uint64_t v) { kv(key, 10); put(v); }
  void add_f64(std::string_view key, double v) { kv(key, 12); put(v); }
  void add_strings(std::string_view key, const std::vector<std::string>& v) {
    kv(key, 9);
    put(uint32_t{8});
    put(static_cast<uint64_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void add_i32s(std::string_view key, const std::vector<int32_t>& v) {
    kv(key, 9);
    put(uint32_t{5});
    put(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) put(x);
  }
  void add_f32s(std::string_view key, const std::vector<float>& v) {
    kv(key, 9);
    put(uint32_t{6});
    put(static_cast<uint64_t>(v.size()));
    for (float x : v) put(x);
  }
  // A tensor with ne[0..n) dims of ggml type `type` and raw data bytes (placed aligned to 32).
  void add_tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, std::vector<uint8_t> data) {
    tensors_.push_back({std::string(name), std::move(ne), type, std::move(data)});
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto w = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    };
    const uint32_t magic = 0x46554747;
    const uint64_t n_t = tensors_.size(), n_kv = n_kv_;
    w(&magic, 4);
    w(&version_, 4);
    w(&n_t, 8);
    w(&n_kv, 8);
    w(meta_.data(), meta_.size());
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors_) {
      const uint64_t len = t.name.size();
      w(&len, 8);
      w(t.name.data(), len);
      const uint32_t nd = static_cast<uint32_t>(t.ne.size());
      w(&nd, 4);
      for (uint64_t d : t.ne) w(&d, 8);
      w(&t.type, 4);
      w(&offset, 8);
      offsets.push_back(offset);
      offset += (t.data.size() + 31) / 32 * 32;
    }
    out.resize((out.size() + 31) / 32 * 32, 0);
    const size_t base = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(base + offsets[i], 0);
      w(tensors_[i].data.data(), tensors_[i].data.size());
    }
    return out;
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
  };
  template <typename T>
  void put(T v) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    meta_.insert(meta_.end(), b, b + sizeof(T));
  }
  void str(std::string_view s) {
    put(static_cast<uint64_t>(s.size()));
    meta_.insert(meta_.end(), s.begin(), s.end());
  }
  void kv(std::string_view key, uint32_t type) {
    ++n_kv_;
    str(key);
    put(type);
  }

  uint32_t version_;
  uint64_t n_kv_ = 0;
  std::vector<uint8_t> meta_;
  std::vector<Tensor> tensors_;
};

}  // namespace snapkv::test

#pragma once
// A fast non-cryptographic 64-bit hash for checksums and fingerprints (context files): four
// independent multiply-rotate lanes over 32-byte blocks, so long inputs hash at several GB/s, then
// a final avalanche. Detects bit flips and truncation; not meant to resist a forger.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace snapkv {

class Hash64 {
 public:
  explicit Hash64(uint64_t seed = 0);
  // Appending in pieces gives the same digest as appending the concatenation.
  Hash64& add(const void* data, size_t n);
  Hash64& add(std::string_view s) { return add_u64(s.size()).add(s.data(), s.size()); }
  Hash64& add_u64(uint64_t v) { return add(&v, sizeof v); }
  uint64_t digest() const;

 private:
  void block(const uint8_t* p);
  uint64_t lane_[4];
  uint8_t tail_[32];
  size_t n_tail_ = 0;
  uint64_t total_ = 0;
};

inline uint64_t hash64(const void* data, size_t n, uint64_t seed = 0) { return Hash64(seed).add(data, n).digest(); }

}  // namespace snapkv

#include "util/hash.h"

#include <algorithm>
#include <cstring>

namespace snapkv {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (x86-64, AArch64), as the GGUF reader
}

uint64_t mix(uint64_t lane, uint64_t word) { return rotl(lane + word * kP2, 31) * kP1; }

uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace

Hash64::Hash64(uint64_t seed) : lane_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1} {}

void Hash64::block(const uint8_t* p) {
  for (int i = 0; i < 4; ++i) lane_[i] = mix(lane_[i], load64(p + 8 * i));
}

Hash64& Hash64::add(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (n_tail_ > 0) {
    const size_t take = std::min(n, sizeof tail_ - n_tail_);
    std::memcpy(tail_ + n_tail_, p, take);
    n_tail_ += take;
    p += take;
    n -= take;
    if (n_tail_ < sizeof tail_) return *this;
    block(tail_);
    n_tail_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) block(p);
  std::memcpy(tail_, p, n);
  n_tail_ = n;
  return *this;
}

uint64_t Hash64::digest() const {
  uint64_t h = rotl(lane_[0], 1) + rotl(lane_[1], 7) + rotl(lane_[2], 12) + rotl(lane_[3], 18);
  h = (h ^ total_) * kP1;
  size_t i = 0;
  for (; i + 8 <= n_tail_; i += 8) h = rotl(h ^ mix(0, load64(tail_ + i)), 27) * kP1 + kP3;
  for (; i < n_tail_; ++i) h = rotl(h ^ (tail_[i] * kP3), 11) * kP1;
  return avalanche(h);
}

}  // namespace snapkv

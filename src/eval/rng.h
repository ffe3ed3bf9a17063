#pragma once
// A seeded random source for generated evaluation cases that draws the same values with every
// compiler and standard library (std::uniform_int_distribution and std::shuffle do not promise
// that): std::mt19937_64 bits, uniform integers by rejection, Fisher-Yates shuffles.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snapkv {

class EvalRng {
 public:
  explicit EvalRng(uint64_t seed) : gen_(seed) {}
  // A seed for a sub-stream, e.g. one per (task, length, sample), from this seed and a label.
  static uint64_t derive(uint64_t seed, std::string_view label) {
    uint64_t h = 14695981039346656037ull ^ seed;
    for (const char c : label) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
  }
  // Uniform in [lo, hi] (both included); lo <= hi.
  int64_t uniform(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(gen_());  // the whole 64-bit range
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x = gen_();
    while (x >= limit) x = gen_();
    return lo + static_cast<int64_t>(x % span);
  }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) {
      std::swap(v[i - 1], v[static_cast<size_t>(uniform(0, static_cast<int64_t>(i) - 1))]);
    }
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }
  uint64_t bits() { return gen_(); }

 private:
  std::mt19937_64 gen_;
};

}  // namespace snapkv

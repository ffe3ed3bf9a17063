#include "kv/kv_bound.h"

#include <algorithm>
#include <cmath>

#include "model/model.h"

namespace snapkv {

int64_t kv_entries_bound(const PressConfig& press, std::span<const int32_t> windows, int64_t n_prompt,
                         int64_t n_generate) {
  int64_t kept = n_prompt;
  const bool whole = !press.compress_short && n_prompt <= press.capacity;
  if (press.compresses() && !whole) {
    kept = press.ratio > 0 ? static_cast<int64_t>(std::ceil(static_cast<double>(n_prompt) * (1 - press.ratio)))
                           : std::min<int64_t>(n_prompt, press.capacity);
    // Whole chunks by kvpress's count can pass the ratio's entries by up to a chunk.
    if (press.chunk > 0 && press.ratio > 0) kept = std::min<int64_t>(n_prompt, kept + press.chunk);
  }
  // Pressed layers hold `kept` entries on average (pyramidkv and ada_kv move budget between
  // layers or heads, not add to it); the layer being pressed holds the whole prompt meanwhile.
  const int64_t in_prefill = kept < n_prompt ? n_prompt : 0;
  int64_t global = 0, windowed = 0;
  for (const int32_t w : windows) {
    if (w > 0) {
      windowed += std::min<int64_t>(n_prompt + n_generate, w - 1 + kPrefillChunk);
    } else {
      ++global;
    }
  }
  return global * (kept + n_generate) + (global > 0 ? in_prefill : 0) + windowed;
}

}  // namespace snapkv

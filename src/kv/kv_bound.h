#pragma once
// How many KV entries a sequence may hold at most, for admission against a memory budget (the
// server): presses keep at most their budget per layer on average, a layer holds its whole prompt
// only until it is pressed, and every generated token adds one entry per head. A sliding-window
// layer is never pressed and holds at most its window and one prefill chunk.
#include <cstdint>
#include <span>

#include "snapkv/press.h"

namespace snapkv {

// Upper bound of the entries per stored head, summed over the layers, at any moment of a prefill
// of n_prompt tokens followed by n_generate generated ones; windows: ModelHparams::layer_window.
int64_t kv_entries_bound(const PressConfig& press, std::span<const int32_t> windows, int64_t n_prompt,
                         int64_t n_generate);

}  // namespace snapkv

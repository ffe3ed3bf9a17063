#pragma once
// How many KV entries a sequence may hold at most, for admission against a memory budget (the
// server): presses keep at most their budget per layer on average, a layer holds its whole prompt
// only until it is pressed, and every generated token adds one entry per head.
#include <cstdint>

#include "snapkv/press.h"

namespace snapkv {

// Upper bound of the entries per stored head, summed over the n_layer layers, at any moment of a
// prefill of n_prompt tokens followed by n_generate generated ones.
int64_t kv_entries_bound(const PressConfig& press, int n_layer, int64_t n_prompt, int64_t n_generate);

}  // namespace snapkv

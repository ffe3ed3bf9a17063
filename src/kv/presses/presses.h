#pragma once
// Constructors of the presses, one per file in this folder; the registry is in kv/press.cpp.
#include <memory>

#include "kv/press.h"

namespace snapkv {

std::unique_ptr<Press> make_full_press(const PressConfig& c);
std::unique_ptr<Press> make_snapkv_press(const PressConfig& c);
std::unique_ptr<Press> make_streaming_llm_press(const PressConfig& c);
std::unique_ptr<Press> make_h2o_press(const PressConfig& c);
std::unique_ptr<Press> make_knorm_press(const PressConfig& c);
std::unique_ptr<Press> make_keydiff_press(const PressConfig& c);
std::unique_ptr<Press> make_random_press(const PressConfig& c);
std::unique_ptr<Press> make_tova_press(const PressConfig& c);
std::unique_ptr<Press> make_pyramidkv_press(const PressConfig& c);
std::unique_ptr<Press> make_ada_kv_press(const PressConfig& c);

}  // namespace snapkv

namespace snapkv {

// Entries layer il keeps per head (window included) under pyramidkv, for heads of n entries.
// paper: B = C - W, min = B / beta, max = 2B - min (if max > n - W: max = n - W, min = 2B - max),
//        prefix budget max - il * (max - min) / (n_layer - 1), plus W.
// kvpress: the same with B = C and the window inside the budget; uniform C when the pyramid
//        would not fit (n >= max >= min >= W fails).
int64_t pyramid_layer_budget(const PressConfig& c, int64_t capacity, int64_t n, int64_t w, int il, int n_layer);

// Ada-KV budgets per head from per-head prefix scores, window excluded (paper variant): the top
// n_heads * B scores over all heads jointly give head h c_h of them, and h keeps
// c_h * (1 - alpha) + B * alpha prefix entries, rounded by largest remainders so that the budgets
// sum to n_heads * B (no head above what it holds).
std::vector<int64_t> ada_prefix_budgets(const std::vector<std::vector<float>>& prefix_scores, int64_t b, double alpha);

}  // namespace snapkv

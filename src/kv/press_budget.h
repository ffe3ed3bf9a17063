#pragma once
// The budget stage shared by every scoring press: how many entries each stored head of a layer
// keeps, and which (cfg.budget, cfg.chunk). Entries scored kKeepAlways (SnapKV's window, TOVA's
// last token, streaming_llm's sinks) are the head's protected entries: always kept, inside its
// budget. docs/presses.md has the formulas.
#include <cstdint>
#include <vector>

#include "kv/press.h"

namespace snapkv {

// The selection of one layer from its press's scores, re-weighted by CriticalKV (cfg.critical),
// under cfg's budget and chunks.
Selection select_budgeted(const PressConfig& cfg, const LayerInput& in, HeadScores scores);

// Entries layer il keeps per head (protected ones included) under the pyramid budget, for heads
// of n entries of which w are protected.
// paper: B = C - w, min = B / beta, max = 2B - min (if max > n - w: max = n - w, min = 2B - max),
//        budget max - il * (max - min) / (n_layer - 1), plus w.
// kvpress: the same with B = C and the protected entries inside the budget; uniform C when the
//        pyramid would not fit (n >= max >= min >= w fails).
int64_t pyramid_layer_budget(const PressConfig& c, int64_t capacity, int64_t n, int64_t w, int il, int n_layer);

// Ada-KV budgets per head from each head's unprotected scores (paper variant): the top
// n_heads * B scores over all heads jointly give head h c_h of them, and h keeps
// c_h * (1 - alpha) + B * alpha of its unprotected entries, rounded by largest remainders so that
// the budgets sum to n_heads * B (no head above what it holds).
std::vector<int64_t> ada_prefix_budgets(const HeadScores& prefix_scores, int64_t b, double alpha);

}  // namespace snapkv

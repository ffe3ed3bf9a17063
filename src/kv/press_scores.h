#pragma once
// Building blocks shared by the presses: scores per stored head over its entries (higher = keep,
// +inf = always keep), pooling, GQA reduction, capacities and top-k selection.
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "kv/press.h"

namespace snapkv {

inline constexpr float kKeepAlways = std::numeric_limits<float>::infinity();

// Entries of the layer's longest head.
int64_t longest_head(std::span<const KvHeadView> kv);
// Entries per KV head a layer keeps: cfg.capacity, or int(n * (1 - ratio)) (at least 1) where n
// is the layer's longest head.
int64_t layer_capacity(const PressConfig& cfg, std::span<const KvHeadView> kv);
// True when the layer stays whole: no head holds more than cfg.capacity entries (the official
// rule) and compress_short is off. In ratio mode the capacity is thus the shortest prompt that is
// compressed; compress_short compresses every prompt by the ratio (kvpress).
bool layer_is_short(const PressConfig& cfg, std::span<const KvHeadView> kv);

// Attention of the recorded queries [first, first + n) (0 = the oldest in in.q_window), per query
// head, summed over those queries, for every entry of its stored head (causal by position).
HeadScores attention_sums(const LayerInput& in, int64_t first, int64_t n);
// The same for the last w window queries (the window's own entries included).
HeadScores window_attention(const LayerInput& in, int64_t w);

// Sliding pooling along entries, stride 1, padding k/2: max pads with -inf, avg divides by k
// (padding counted, PyTorch's count_include_pad).
std::vector<float> pool1d(std::span<const float> s, int kernel, PoolKind kind);

// Per query head scores -> per stored head: mean or max over each group of query heads, or the
// query head's own scores when every query head has its own stored head.
HeadScores reduce_gqa(const HeadScores& per_query_head, int n_stored, GqaReduce how);

// SnapKV's scores: window attention over the prefix (all entries but the last w), pooled, reduced
// over GQA groups; the window's entries get kKeepAlways.
HeadScores snapkv_scores(const PressConfig& cfg, const LayerInput& in);

// CriticalKV (cfg.critical > 0; kvpress's CriticalKVPress): per stored head, the best
// int(C * critical) entries by the press's scores s come first (C: the capacity, or
// (1 - ratio) * n); the others are ranked by (score + 1e-4) * ||W_o,h v||_1, the L1 norm of what
// the entry's value adds to the layer's output through each query head h reading it (in.out_proj),
// averaged over the head's query group. Protected entries (kKeepAlways) stay protected.
HeadScores critical_scores(const PressConfig& cfg, const LayerInput& in, HeadScores s);

// Indices of the n highest scores (ties: the earlier entry), ascending.
std::vector<int32_t> top_k(std::span<const float> scores, int64_t n);
// The n best entries of every head (top_k); with cfg.chunk > 0, whole chunks of that many entries
// instead, the same in every head (ChunkKV, kvpress's ChunkKVPress; docs/presses.md), when the
// heads hold the same entries and at least one chunk; chunk_ends: where each chunk ends
// (exclusive, ascending, the last = the entries held), when not every cfg.chunk entries.
Selection select_top(const PressConfig& cfg, const HeadScores& scores, int64_t n, std::vector<int64_t> chunk_ends = {});

}  // namespace snapkv

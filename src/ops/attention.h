#pragma once
// Causal multi-head attention with grouped KV heads, flash-style: keys are visited in blocks
// with an online softmax, so no [n_tok x n_keys] matrix is ever materialized.
#include <cstdint>
#include <cstddef>
#include <span>

#include "snapkv/types.h"
#include "util/thread_pool.h"

namespace snapkv {

size_t kv_type_size(KvType t);

// The stored entries of one KV head: n entries of keys and values [n, head_dim] of the given type
// (post-RoPE keys) and their original token positions, ascending. A query at position p sees the
// entries at positions p - window < pos <= p of a sliding-window layer (window > 0), every entry
// at pos <= p otherwise.
struct KvHeadView {
  int64_t n = 0;
  const void* k = nullptr;
  const void* v = nullptr;
  const int32_t* pos = nullptr;
  KvType type = KvType::kF32;
  int32_t window = 0;
};

// Entry j of a stored row-major [n, d] array of the given type, widened to f32.
void kv_row_to_f32(KvType type, const void* base, int64_t j, int d, float* out);

// q:   [n_tok, n_head, head_dim] post-RoPE queries at positions q_pos[n_tok]
// out: [n_tok, n_head, head_dim]
// Query head h reads KV head h / (n_head / kv.size()) and attends to the entries whose position
// is <= its own (and within the view's window). Every query must see at least one entry.
// lse (optional) [n_tok, n_head]: each row's log-sum-exp of its scaled scores (q.k / sqrt(d)),
// which lets attention_column_sums skip its first pass.
void attention(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
               std::span<const KvHeadView> kv, float* out, ThreadPool& pool, float* lse = nullptr);

// Attention of one query token per sequence for n_seq sequences, each over its own entries
// (batched decode): q, out [n_seq, n_head, head_dim]; q_pos[n_seq]; kv[b] the KV heads of
// sequence b (the same count for all). The keys are split into ranges that the threads handle
// apart and then merge (flash-decoding), so one sequence with few KV heads still uses every
// thread. attention() takes this path for n_tok == 1.
void attention_decode(const float* q, const int32_t* q_pos, int n_seq, int n_head, int head_dim,
                      std::span<const std::span<const KvHeadView>> kv, float* out, ThreadPool& pool,
                      float* lse = nullptr);

// Observed attention: for every query head h, adds to col_sums[h][j] the softmax probability
// with which each of the n_tok queries attends to entry j of its KV head (same causal rule as
// attention()). col_sums[h] has kv[h / group].n elements. Two passes over the keys (row maxima
// and sums, then probabilities), so nothing of size n_tok x n_keys is stored; one pass when lse
// gives the rows' log-sum-exp (from attention() over the same entries).
// reduce kMax keeps each column's largest probability instead of the sum (col_sums must start at
// 0 or at earlier maxima).
enum class ColumnReduce { kSum, kMax };
void attention_column_sums(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                           int head_dim, std::span<const KvHeadView> kv, std::span<float* const> col_sums,
                           ThreadPool& pool, const float* lse = nullptr, ColumnReduce reduce = ColumnReduce::kSum);

// Each row's log-sum-exp of its scaled scores over the entries it sees in kv (the same causal
// rule), -inf where it sees none: lse [n_tok, n_head]. Softmax denominators over a union of
// entry ranges are combined from these (KVzip's scores).
void attention_row_lse(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
                       std::span<const KvHeadView> kv, float* lse, ThreadPool& pool);

// Scalar oracle for tests: materializes each row's scores and uses a two-pass softmax in double.
void attention_reference(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                         int head_dim, std::span<const KvHeadView> kv, float* out);

}  // namespace snapkv

#pragma once
// Causal multi-head attention with grouped KV heads, flash-style: keys are visited in blocks
// with an online softmax, so no [n_tok x n_keys] matrix is ever materialized.
#include <cstdint>
#include <span>

#include "util/thread_pool.h"

namespace snapkv {

// The stored entries of one KV head: n entries of keys and values [n, head_dim] (post-RoPE keys)
// and their original token positions, ascending.
struct KvHeadView {
  int64_t n = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  const int32_t* pos = nullptr;
};

// q:   [n_tok, n_head, head_dim] post-RoPE queries at positions q_pos[n_tok]
// out: [n_tok, n_head, head_dim]
// Query head h reads KV head h / (n_head / kv.size()) and attends to the entries whose position
// is <= its own. Every query must see at least one entry.
void attention(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
               std::span<const KvHeadView> kv, float* out, ThreadPool& pool);

// Scalar oracle for tests: materializes each row's scores and uses a two-pass softmax in double.
void attention_reference(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                         int head_dim, std::span<const KvHeadView> kv, float* out);

}  // namespace snapkv

#pragma once
// Causal multi-head attention with grouped KV heads, flash-style: keys are visited in blocks
// with an online softmax, so no [n_tok x n_keys] matrix is ever materialized.
#include <cstdint>
#include <cstddef>
#include <span>

#include "util/thread_pool.h"

namespace snapkv {

// Element type of stored keys and values.
enum class KvType : uint8_t { kF32, kF16, kBF16 };
size_t kv_type_size(KvType t);
const char* kv_type_name(KvType t);

// The stored entries of one KV head: n entries of keys and values [n, head_dim] of the given type
// (post-RoPE keys) and their original token positions, ascending.
struct KvHeadView {
  int64_t n = 0;
  const void* k = nullptr;
  const void* v = nullptr;
  const int32_t* pos = nullptr;
  KvType type = KvType::kF32;
};

// Entry j of a stored row-major [n, d] array of the given type, widened to f32.
void kv_row_to_f32(KvType type, const void* base, int64_t j, int d, float* out);

// q:   [n_tok, n_head, head_dim] post-RoPE queries at positions q_pos[n_tok]
// out: [n_tok, n_head, head_dim]
// Query head h reads KV head h / (n_head / kv.size()) and attends to the entries whose position
// is <= its own. Every query must see at least one entry.
void attention(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
               std::span<const KvHeadView> kv, float* out, ThreadPool& pool);

// Observed attention: for every query head h, adds to col_sums[h][j] the softmax probability
// with which each of the n_tok queries attends to entry j of its KV head (same causal rule as
// attention()). col_sums[h] has kv[h / group].n elements. Two passes over the keys (row maxima
// and sums, then probabilities), so nothing of size n_tok x n_keys is stored.
void attention_column_sums(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                           int head_dim, std::span<const KvHeadView> kv, std::span<float* const> col_sums,
                           ThreadPool& pool);

// Scalar oracle for tests: materializes each row's scores and uses a two-pass softmax in double.
void attention_reference(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                         int head_dim, std::span<const KvHeadView> kv, float* out);

}  // namespace snapkv

#pragma once
// KV cache storage: per layer and per stored head, the keys (post-RoPE), values and the original
// position of each entry. Heads may hold different numbers of entries (compression keeps
// different tokens per head) without padding; appends are amortized O(1). Keys and values are
// stored as f16 (default), bf16 or f32 and widened by the attention kernels.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/kv_store.h"
#include "util/aligned_vector.h"

namespace snapkv {

class KvCache final : public KvStore {
 public:
  // replicate > 1 stores every KV head that many times, one copy per query head of its group, so
  // each query head can keep its own entries (SnapKV's per_query_head mode, as the official code).
  KvCache(int n_layer, int n_head_kv, int head_dim, KvType type = KvType::kF16, int replicate = 1);

  void append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) override;
  std::span<const KvHeadView> layer(int il) override { return std::as_const(*this).layer(il); }
  std::span<const KvHeadView> layer(int il) const;

  // Keeps only the entries at idx (ascending indices into the head's current entries) of stored
  // head ih of layer il, and releases the memory of the others.
  void keep(int il, int ih, std::span<const int32_t> idx);

  int n_layer() const { return n_layer_; }
  int n_head() const { return n_head_; }  // stored heads per layer: n_head_kv * replicate
  int head_dim() const { return head_dim_; }
  KvType type() const { return type_; }
  int64_t head_size(int il, int ih) const { return static_cast<int64_t>(head(il, ih).pos.size()); }
  // Entries over all layers and heads.
  int64_t entries() const;
  // Bytes of the stored entries (keys, values and positions): the figure reported to users.
  size_t bytes() const;
  // Bytes allocated for them (growth headroom included).
  size_t allocated_bytes() const;
  // Bytes per entry (key, value and position).
  size_t entry_bytes() const;
  void clear();

 private:
  struct Head {
    // [n, head_dim] elements of type_, from a 64-byte boundary: rows whose size is a multiple of
    // 64 bytes (f16 with head_dim 64) start on cache lines, so their vector loads never straddle two.
    AlignedVector<uint8_t> k, v;
    std::vector<int32_t> pos;   // [n]
  };
  Head& head(int il, int ih) { return heads_[static_cast<size_t>(il) * n_head_ + ih]; }
  const Head& head(int il, int ih) const { return heads_[static_cast<size_t>(il) * n_head_ + ih]; }
  void store_row(const float* src, uint8_t* dst) const;

  int n_layer_, n_head_kv_, head_dim_, replicate_, n_head_;
  KvType type_;
  size_t row_bytes_;
  std::vector<Head> heads_;        // [n_layer * n_head]
  mutable std::vector<KvHeadView> views_;  // [n_layer * n_head], refreshed by layer()
};

}  // namespace snapkv

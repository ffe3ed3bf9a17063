#pragma once
// KV cache storage: per layer and per KV head, the stored keys (post-RoPE), values and the
// original position of each entry. Heads may hold different numbers of entries (compression
// keeps different tokens per head), and appends are amortized O(1).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/kv_store.h"

namespace snapkv {

class KvCache final : public KvStore {
 public:
  KvCache(int n_layer, int n_head_kv, int head_dim);

  void append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) override;
  std::span<const KvHeadView> layer(int il) override;

  int n_layer() const { return n_layer_; }
  int n_head_kv() const { return n_head_kv_; }
  int head_dim() const { return head_dim_; }
  int64_t head_size(int il, int ih) const { return static_cast<int64_t>(head(il, ih).pos.size()); }
  // Bytes held by stored entries (keys, values and positions), the figure reported to users.
  size_t bytes() const;
  // Drops every entry.
  void clear();

 private:
  struct Head {
    std::vector<float> k, v;  // [n, head_dim]
    std::vector<int32_t> pos; // [n]
  };
  Head& head(int il, int ih) { return heads_[static_cast<size_t>(il) * n_head_kv_ + ih]; }
  const Head& head(int il, int ih) const { return heads_[static_cast<size_t>(il) * n_head_kv_ + ih]; }

  int n_layer_, n_head_kv_, head_dim_;
  std::vector<Head> heads_;            // [n_layer * n_head_kv]
  std::vector<KvHeadView> views_;      // [n_layer * n_head_kv], refreshed by layer()
};

}  // namespace snapkv

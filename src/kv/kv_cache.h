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
  // windows[il] > 0 (ModelHparams::layer_window): layer il is a sliding-window layer, whose
  // queries see only the last windows[il] positions; it drops older entries as it appends, so it
  // holds at most windows[il] - 1 entries plus the largest append. Empty: every layer sees all.
  KvCache(int n_layer, int n_head_kv, int head_dim, KvType type = KvType::kF16, int replicate = 1,
          std::vector<int32_t> windows = {});
  KvCache(const KvCache& other);
  KvCache& operator=(const KvCache& other);
  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  void append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) override;
  std::span<const KvHeadView> layer(int il) override { return std::as_const(*this).layer(il); }
  std::span<const KvHeadView> layer(int il) const;

  // Keeps only the entries at idx (ascending indices into the head's current entries) of stored
  // head ih of layer il, and releases the memory of the others.
  void keep(int il, int ih, std::span<const int32_t> idx);
  // Drops every entry at position >= pos (the newest ones: each head's positions ascend), keeping
  // the memory for the next appends: speculative decoding's rejected drafts.
  void drop_from(int32_t pos);
  // Whether, after drop_from(pos), every sliding-window layer still holds all that a query at
  // pos sees (it drops older entries as it grows, so a state cut far back may lack them).
  bool can_resume_at(int32_t pos) const;
  // Replaces layer il's entries: stored head ih gets the positions pos[ih] and that many key and
  // value rows of this cache's type from keys[ih] and values[ih] (any alignment; a context file).
  void set_layer(int il, std::vector<std::vector<int32_t>> pos, std::span<const uint8_t* const> keys,
                 std::span<const uint8_t* const> values);

  int n_layer() const { return n_layer_; }
  int n_head() const { return n_head_; }  // stored heads per layer: n_head_kv * replicate
  int head_dim() const { return head_dim_; }
  int replicate() const { return replicate_; }
  int32_t window(int il) const { return windows_[il]; }
  const std::vector<int32_t>& windows() const { return windows_; }
  KvType type() const { return type_; }
  int64_t head_size(int il, int ih) const { return static_cast<int64_t>(layers_[il].pos[ih].size()); }
  // Entries over all layers and heads.
  int64_t entries() const;
  // Bytes of the stored entries (keys, values and positions): the figure reported to users.
  size_t bytes() const;
  // Bytes allocated for them (growth headroom included).
  size_t allocated_bytes() const;
  // Bytes of one key or value row.
  size_t row_bytes() const { return row_bytes_; }
  // Bytes per entry (key, value and position).
  size_t entry_bytes() const;
  void clear();

 private:
  // Memory left uninitialized (pages never written take none), from a cache line; from 2 MiB on
  // in huge pages (CacheLineAllocator).
  struct Buffer {
    Buffer() = default;
    explicit Buffer(size_t n) : p(n ? CacheLineAllocator<uint8_t>().allocate(n) : nullptr), bytes(n) {}
    Buffer(Buffer&& o) noexcept : p(std::exchange(o.p, nullptr)), bytes(std::exchange(o.bytes, 0)) {}
    Buffer& operator=(Buffer&& o) noexcept {
      std::swap(p, o.p);
      std::swap(bytes, o.bytes);
      return *this;
    }
    ~Buffer() {
      if (p) CacheLineAllocator<uint8_t>().deallocate(p, bytes);
    }
    uint8_t* p = nullptr;
    size_t bytes = 0;
  };
  // The keys and values of all stored heads of a layer, in one buffer, so that a long context's
  // layer is 2 MiB or more and lies in huge pages. A buffer per head and per K or V (about 1 MB
  // each for a long context) would lie in 4 KiB pages, each page a TLB miss and the end of the
  // hardware prefetcher's stream, which slows attention in decode. Head h has room for cap[h]
  // entries: its keys from byte at[h], then its values; rows of row_bytes_, so rows whose size is
  // a multiple of 64 bytes (f16 with head_dim 64) start on cache lines and their vector loads
  // never straddle two.
  struct Layer {
    Buffer data;
    std::vector<size_t> cap, at;            // [n_head]
    std::vector<std::vector<int32_t>> pos;  // [n_head][entries]
  };
  // An empty layer with room for cap[h] entries per head.
  Layer layout(const std::vector<size_t>& cap) const;
  uint8_t* key_row(const Layer& l, int ih, size_t j) const { return l.data.p + l.at[ih] + j * row_bytes_; }
  uint8_t* value_row(const Layer& l, int ih, size_t j) const { return key_row(l, ih, l.cap[ih] + j); }
  // Copies each head's entries of `from` into `to`, which has room for them.
  void copy_entries(const Layer& from, const Layer& to) const;
  // Moves layer l's entries into a buffer with room for cap[h] entries per head (each >= its count).
  void reserve(Layer& l, const std::vector<size_t>& cap) const;
  void store_row(const float* src, uint8_t* dst) const;
  // Drops head ih's entries at positions below `pos`, keeping its room.
  void drop_before(Layer& l, int ih, int32_t pos) const;

  int n_layer_, n_head_kv_, head_dim_, replicate_, n_head_;
  KvType type_;
  size_t row_bytes_;
  std::vector<int32_t> windows_;           // [n_layer]
  std::vector<Layer> layers_;              // [n_layer]
  mutable std::vector<KvHeadView> views_;  // [n_layer * n_head], refreshed by layer()
};

}  // namespace snapkv

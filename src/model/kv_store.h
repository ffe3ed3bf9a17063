#pragma once
// What a forward pass needs from a KV cache. The cache itself lives in kv/ (above model/ in the
// layering) and implements this interface, so architectures know nothing about compression.
#include <cstdint>
#include <span>

#include "ops/attention.h"

namespace snapkv {

class KvStore {
 public:
  virtual ~KvStore() = default;

  // Stores n_tok new entries of layer il. k, v: [n_tok, n_head_kv, head_dim], keys post-RoPE;
  // pos: [n_tok], ascending and after every position already stored.
  virtual void append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) = 0;

  // The entries attention of layer il reads: one view per KV head, valid until the next append.
  virtual std::span<const KvHeadView> layer(int il) = 0;
};

}  // namespace snapkv

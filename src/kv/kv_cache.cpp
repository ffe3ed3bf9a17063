#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "ops/convert.h"
#include "ops/fp16.h"
#include "util/error.h"

namespace snapkv {

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim, KvType type, int replicate)
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim), replicate_(replicate),
      n_head_(n_head_kv * replicate), type_(type), row_bytes_(head_dim * kv_type_size(type)),
      heads_(static_cast<size_t>(n_layer) * n_head_), views_(heads_.size()) {
  if (replicate < 1) fail(ErrorKind::kInvalidArgument, "KV cache: replicate must be >= 1, got {}", replicate);
}

void KvCache::store_row(const float* src, uint8_t* dst) const {
  switch (type_) {
    case KvType::kF32:
      std::memcpy(dst, src, row_bytes_);
      return;
    case KvType::kF16:
      f32_to_fp16_row(src, dst, head_dim_);
      return;
    case KvType::kBF16:
      for (int i = 0; i < head_dim_; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
  }
}

void KvCache::append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) {
  const int64_t d = head_dim_;
  for (int ih = 0; ih < n_head_; ++ih) {
    Head& h = head(il, ih);
    if (!h.pos.empty() && n_tok > 0 && pos[0] <= h.pos.back()) {
      fail(ErrorKind::kInternal, "KV cache: position {} appended after {}", pos[0], h.pos.back());
    }
    const size_t n = h.pos.size(), n_new = n + static_cast<size_t>(n_tok);
    if (n_new > h.pos.capacity()) {
      // Geometric growth by 1.25 (amortized O(1)) with less slack than doubling: after a
      // compression the cache holds C entries, and decoding should not reserve another C.
      const size_t cap = std::max(n_new, h.pos.capacity() + h.pos.capacity() / 4 + 64);
      h.pos.reserve(cap);
      h.k.reserve(cap * row_bytes_);
      h.v.reserve(cap * row_bytes_);
    }
    h.k.resize(n_new * row_bytes_);
    h.v.resize(n_new * row_bytes_);
    const int src_head = ih / replicate_;
    for (int64_t t = 0; t < n_tok; ++t) {
      store_row(k + (t * n_head_kv_ + src_head) * d, h.k.data() + (n + t) * row_bytes_);
      store_row(v + (t * n_head_kv_ + src_head) * d, h.v.data() + (n + t) * row_bytes_);
      h.pos.push_back(pos[t]);
    }
  }
}

std::span<const KvHeadView> KvCache::layer(int il) const {
  KvHeadView* out = views_.data() + static_cast<size_t>(il) * n_head_;
  for (int ih = 0; ih < n_head_; ++ih) {
    const Head& h = head(il, ih);
    out[ih] = KvHeadView{static_cast<int64_t>(h.pos.size()), h.k.data(), h.v.data(), h.pos.data(), type_};
  }
  return {out, static_cast<size_t>(n_head_)};
}

void KvCache::keep(int il, int ih, std::span<const int32_t> idx) {
  Head& h = head(il, ih);
  const int64_t n = static_cast<int64_t>(h.pos.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= n || (i > 0 && idx[i] <= idx[i - 1])) {
      fail(ErrorKind::kInternal, "KV cache: kept indices must ascend within [0, {})", n);
    }
  }
  // Indices ascend, so idx[i] >= i and moving entries forward never overwrites one still needed.
  for (size_t i = 0; i < idx.size(); ++i) {
    const size_t j = static_cast<size_t>(idx[i]);
    if (j == i) continue;
    std::memcpy(h.k.data() + i * row_bytes_, h.k.data() + j * row_bytes_, row_bytes_);
    std::memcpy(h.v.data() + i * row_bytes_, h.v.data() + j * row_bytes_, row_bytes_);
    h.pos[i] = h.pos[j];
  }
  h.k.resize(idx.size() * row_bytes_);
  h.v.resize(idx.size() * row_bytes_);
  h.pos.resize(idx.size());
  h.k.shrink_to_fit();
  h.v.shrink_to_fit();
  h.pos.shrink_to_fit();
}

int64_t KvCache::entries() const {
  int64_t n = 0;
  for (const Head& h : heads_) n += static_cast<int64_t>(h.pos.size());
  return n;
}

size_t KvCache::entry_bytes() const { return 2 * row_bytes_ + sizeof(int32_t); }

size_t KvCache::bytes() const { return static_cast<size_t>(entries()) * entry_bytes(); }

size_t KvCache::allocated_bytes() const {
  size_t b = 0;
  for (const Head& h : heads_) b += h.k.capacity() + h.v.capacity() + h.pos.capacity() * sizeof(int32_t);
  return b;
}

void KvCache::clear() {
  for (Head& h : heads_) h = Head{};
}

}  // namespace snapkv

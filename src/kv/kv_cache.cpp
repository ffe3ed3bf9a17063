#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "ops/convert.h"
#include "ops/fp16.h"
#include "util/error.h"

namespace snapkv {

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim, KvType type, int replicate, std::vector<int32_t> windows)
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim), replicate_(replicate),
      n_head_(n_head_kv * replicate), type_(type), row_bytes_(head_dim * kv_type_size(type)),
      windows_(std::move(windows)), views_(static_cast<size_t>(n_layer) * n_head_) {
  if (replicate < 1) fail(ErrorKind::kInvalidArgument, "KV cache: replicate must be >= 1, got {}", replicate);
  if (windows_.empty()) windows_.assign(n_layer, 0);
  if (windows_.size() != static_cast<size_t>(n_layer)) {
    fail(ErrorKind::kInvalidArgument, "KV cache: {} windows for {} layers", windows_.size(), n_layer);
  }
  clear();
}

KvCache::KvCache(const KvCache& other)
    : n_layer_(other.n_layer_), n_head_kv_(other.n_head_kv_), head_dim_(other.head_dim_),
      replicate_(other.replicate_), n_head_(other.n_head_), type_(other.type_), row_bytes_(other.row_bytes_),
      windows_(other.windows_), views_(other.views_.size()) {
  layers_.reserve(other.layers_.size());
  for (const Layer& o : other.layers_) {
    Layer& l = layers_.emplace_back(layout(o.cap));
    copy_entries(o, l);
    l.pos = o.pos;
  }
}

KvCache& KvCache::operator=(const KvCache& other) {
  if (this != &other) *this = KvCache(other);
  return *this;
}

KvCache::Layer KvCache::layout(const std::vector<size_t>& cap) const {
  Layer l;
  l.cap = cap;
  l.at.resize(cap.size());
  size_t bytes = 0;
  for (size_t ih = 0; ih < cap.size(); ++ih) {
    l.at[ih] = bytes;
    bytes += 2 * cap[ih] * row_bytes_;
  }
  l.data = Buffer(bytes);
  l.pos.resize(cap.size());
  return l;
}

void KvCache::copy_entries(const Layer& from, const Layer& to) const {
  for (int ih = 0; ih < n_head_; ++ih) {
    const size_t bytes = from.pos[ih].size() * row_bytes_;
    if (bytes == 0) continue;
    std::memcpy(key_row(to, ih, 0), key_row(from, ih, 0), bytes);
    std::memcpy(value_row(to, ih, 0), value_row(from, ih, 0), bytes);
  }
}

void KvCache::reserve(Layer& l, const std::vector<size_t>& cap) const {
  Layer moved = layout(cap);
  copy_entries(l, moved);
  moved.pos = std::move(l.pos);
  l = std::move(moved);
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
  Layer& l = layers_[il];
  std::vector<size_t> cap;  // stays empty (no allocation) unless a head must grow
  for (int ih = 0; ih < n_head_; ++ih) {
    const std::vector<int32_t>& p = l.pos[ih];
    if (!p.empty() && n_tok > 0 && pos[0] <= p.back()) {
      fail(ErrorKind::kInternal, "KV cache: position {} appended after {}", pos[0], p.back());
    }
    size_t n_new = p.size() + static_cast<size_t>(n_tok);
    // A window layer: the new tokens' queries see nothing before pos[0] - (window - 1). Dropped
    // only when the room is full, so entries move once per many appends, not at every token.
    if (n_new > l.cap[ih] && windows_[il] > 0 && n_tok > 0) {
      drop_before(l, ih, pos[0] - (windows_[il] - 1));
      n_new = p.size() + static_cast<size_t>(n_tok);
    }
    if (n_new > l.cap[ih]) {
      // Geometric growth by 1.25 (amortized O(1)) with less slack than doubling: after a
      // compression the cache holds C entries, and decoding should not reserve another C.
      // A window layer's room stops at what its window needs.
      if (cap.empty()) cap = l.cap;
      size_t grown = l.cap[ih] + l.cap[ih] / 4 + 64;
      if (windows_[il] > 0) grown = std::min(grown, static_cast<size_t>(windows_[il] - 1 + n_tok));
      cap[ih] = std::max(n_new, grown);
    }
  }
  if (!cap.empty()) reserve(l, cap);
  for (int ih = 0; ih < n_head_; ++ih) {
    const size_t n = l.pos[ih].size();
    const int src_head = ih / replicate_;
    for (int64_t t = 0; t < n_tok; ++t) {
      store_row(k + (t * n_head_kv_ + src_head) * d, key_row(l, ih, n + t));
      store_row(v + (t * n_head_kv_ + src_head) * d, value_row(l, ih, n + t));
      l.pos[ih].push_back(pos[t]);
    }
  }
}

std::span<const KvHeadView> KvCache::layer(int il) const {
  KvHeadView* out = views_.data() + static_cast<size_t>(il) * n_head_;
  const Layer& l = layers_[il];
  for (int ih = 0; ih < n_head_; ++ih) {
    out[ih] = KvHeadView{static_cast<int64_t>(l.pos[ih].size()), key_row(l, ih, 0), value_row(l, ih, 0),
                         l.pos[ih].data(), type_, windows_[il]};
  }
  return {out, static_cast<size_t>(n_head_)};
}

void KvCache::keep(int il, int ih, std::span<const int32_t> idx) {
  Layer& l = layers_[il];
  std::vector<int32_t>& pos = l.pos[ih];
  const int64_t n = static_cast<int64_t>(pos.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= n || (i > 0 && idx[i] <= idx[i - 1])) {
      fail(ErrorKind::kInternal, "KV cache: kept indices must ascend within [0, {})", n);
    }
  }
  // Indices ascend, so idx[i] >= i and moving entries forward never overwrites one still needed.
  for (size_t i = 0; i < idx.size(); ++i) {
    const size_t j = static_cast<size_t>(idx[i]);
    if (j == i) continue;
    std::memcpy(key_row(l, ih, i), key_row(l, ih, j), row_bytes_);
    std::memcpy(value_row(l, ih, i), value_row(l, ih, j), row_bytes_);
    pos[i] = pos[j];
  }
  pos.resize(idx.size());
  pos.shrink_to_fit();
  std::vector<size_t> cap = l.cap;
  cap[ih] = idx.size();
  reserve(l, cap);
}

void KvCache::drop_before(Layer& l, int ih, int32_t pos) const {
  std::vector<int32_t>& p = l.pos[ih];
  const size_t n = static_cast<size_t>(std::lower_bound(p.begin(), p.end(), pos) - p.begin());
  if (n == 0) return;
  const size_t rest = p.size() - n;
  std::memmove(key_row(l, ih, 0), key_row(l, ih, n), rest * row_bytes_);
  std::memmove(value_row(l, ih, 0), value_row(l, ih, n), rest * row_bytes_);
  p.erase(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
}

void KvCache::drop_from(int32_t pos) {
  for (Layer& l : layers_) {
    for (std::vector<int32_t>& p : l.pos) p.erase(std::lower_bound(p.begin(), p.end(), pos), p.end());
  }
}

bool KvCache::can_resume_at(int32_t pos) const {
  for (int il = 0; il < n_layer_; ++il) {
    if (windows_[il] <= 0 || pos == 0) continue;
    // A window layer's positions are consecutive, so its first one tells.
    const int32_t lo = std::max(0, pos - (windows_[il] - 1));
    for (const std::vector<int32_t>& p : layers_[il].pos) {
      if (p.empty() || p.front() > lo) return false;
    }
  }
  return true;
}

void KvCache::set_layer(int il, std::vector<std::vector<int32_t>> pos, std::span<const uint8_t* const> keys,
                        std::span<const uint8_t* const> values) {
  if (pos.size() != static_cast<size_t>(n_head_) || keys.size() != pos.size() || values.size() != pos.size()) {
    fail(ErrorKind::kInternal, "KV cache: set_layer needs {} heads", n_head_);
  }
  std::vector<size_t> cap(n_head_);
  for (int ih = 0; ih < n_head_; ++ih) cap[ih] = pos[ih].size();
  Layer l = layout(cap);
  for (int ih = 0; ih < n_head_; ++ih) {
    if (cap[ih] == 0) continue;
    std::memcpy(key_row(l, ih, 0), keys[ih], cap[ih] * row_bytes_);
    std::memcpy(value_row(l, ih, 0), values[ih], cap[ih] * row_bytes_);
  }
  l.pos = std::move(pos);
  layers_[il] = std::move(l);
}

int64_t KvCache::entries() const {
  int64_t n = 0;
  for (const Layer& l : layers_) {
    for (const std::vector<int32_t>& p : l.pos) n += static_cast<int64_t>(p.size());
  }
  return n;
}

size_t KvCache::entry_bytes() const { return 2 * row_bytes_ + sizeof(int32_t); }

size_t KvCache::bytes() const { return static_cast<size_t>(entries()) * entry_bytes(); }

size_t KvCache::allocated_bytes() const {
  size_t b = 0;
  for (const Layer& l : layers_) {
    b += l.data.bytes;
    for (const std::vector<int32_t>& p : l.pos) b += p.capacity() * sizeof(int32_t);
  }
  return b;
}

void KvCache::clear() {
  layers_.clear();
  for (int il = 0; il < n_layer_; ++il) layers_.push_back(layout(std::vector<size_t>(n_head_, 0)));
}

}  // namespace snapkv

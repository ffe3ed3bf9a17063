#include "kv/kv_cache.h"

#include "util/error.h"

namespace snapkv {

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim)
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim),
      heads_(static_cast<size_t>(n_layer) * n_head_kv), views_(heads_.size()) {}

void KvCache::append(int il, int64_t n_tok, const float* k, const float* v, const int32_t* pos) {
  const int64_t d = head_dim_;
  for (int ih = 0; ih < n_head_kv_; ++ih) {
    Head& h = head(il, ih);
    if (!h.pos.empty() && n_tok > 0 && pos[0] <= h.pos.back()) {
      fail(ErrorKind::kInternal, "KV cache: position {} appended after {}", pos[0], h.pos.back());
    }
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* kt = k + (t * n_head_kv_ + ih) * d;
      const float* vt = v + (t * n_head_kv_ + ih) * d;
      h.k.insert(h.k.end(), kt, kt + d);
      h.v.insert(h.v.end(), vt, vt + d);
      h.pos.push_back(pos[t]);
    }
  }
}

std::span<const KvHeadView> KvCache::layer(int il) {
  KvHeadView* out = views_.data() + static_cast<size_t>(il) * n_head_kv_;
  for (int ih = 0; ih < n_head_kv_; ++ih) {
    const Head& h = head(il, ih);
    out[ih] = KvHeadView{static_cast<int64_t>(h.pos.size()), h.k.data(), h.v.data(), h.pos.data()};
  }
  return {out, static_cast<size_t>(n_head_kv_)};
}

size_t KvCache::bytes() const {
  size_t b = 0;
  for (const Head& h : heads_) b += (h.k.size() + h.v.size()) * sizeof(float) + h.pos.size() * sizeof(int32_t);
  return b;
}

void KvCache::clear() {
  for (Head& h : heads_) {
    h.k.clear();
    h.v.clear();
    h.pos.clear();
  }
}

}  // namespace snapkv

#include "engine/state_store.h"

#include <fmt/core.h>

#include <algorithm>

#include "util/hash.h"

namespace snapkv {
namespace {

// Beyond this many bytes waiting to be written, new saves are dropped (the store is slower than
// the server finishes sequences).
constexpr size_t kMaxPendingBytes = size_t{1} << 30;

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

StateStore::StateStore(std::unique_ptr<BlobStore> blobs, const ContextMeta& identity)
    : blobs_(std::move(blobs)), identity_(identity), writer_([this] { write_loop(); }) {}

StateStore::~StateStore() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

std::string StateStore::index_key(const std::string& key, std::span<const int32_t> tokens) const {
  Hash64 h(identity_.model_fingerprint);
  h.add_u64(identity_.tokenizer_fingerprint).add(key).add(tokens.data(), tokens.size_bytes());
  return "snapkv:1:index:" + hex(h.digest());
}

void StateStore::save(const std::string& key, const Sequence& seq) {
  const std::vector<int32_t>& tokens = seq.tokens();
  if (tokens.size() < static_cast<size_t>(kBlock) || seq.kv().replicate() != 1 || seq.logits().empty()) return;
  ContextMeta m = identity_;
  m.kv_type = seq.kv().type();
  m.pressed = seq.compressor() != nullptr;
  m.press = key;
  const std::vector<WindowQueries> windows = seq.windows();
  std::vector<uint8_t> file = encode_context(m, tokens, seq.logits(), windows, seq.kv());
  const std::string state = "snapkv:1:state:" + index_key(key, tokens).substr(15);
  std::lock_guard lk(mu_);
  if (stopping_ || pending_bytes_ + file.size() > kMaxPendingBytes) return;
  auto push = [&](std::string k, std::vector<uint8_t> v) {
    pending_bytes_ += v.size();
    writes_.push_back({std::move(k), std::move(v)});
  };
  push(state, std::move(file));
  // The index after the state, so that whoever finds the index finds the state.
  for (size_t k = kBlock; k <= tokens.size(); k += kBlock) {
    push(index_key(key, std::span(tokens).first(k)), std::vector<uint8_t>(state.begin(), state.end()));
  }
  cv_.notify_all();
}

void StateStore::write_loop() {
  for (;;) {
    Write w;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !writes_.empty(); });
      if (writes_.empty()) return;
      w = std::move(writes_.front());
      writes_.pop_front();
    }
    blobs_->put(w.key, w.value);
    std::lock_guard lk(mu_);
    pending_bytes_ -= w.value.size();
  }
}

PromptCache::Hit StateStore::find(const std::string& key, std::span<const int32_t> prompt, const Decoder& model,
                                  int n_ctx, ThreadPool& pool, const SequenceOptions& options) {
  if (prompt.size() <= static_cast<size_t>(kBlock)) return {};
  std::vector<std::string> keys;
  for (size_t k = kBlock; k < prompt.size(); k += kBlock) keys.push_back(index_key(key, prompt.first(k)));
  const std::vector<std::optional<std::string>> found = blobs_->get_many(keys);
  std::vector<std::string> tried;  // several index keys name the same state
  for (size_t i = found.size(); i-- > 0;) {
    if (!found[i] || std::find(tried.begin(), tried.end(), *found[i]) != tried.end()) continue;
    tried.push_back(*found[i]);
    const std::optional<std::vector<uint8_t>> blob = blobs_->get(*found[i]);
    if (!blob) continue;
    try {
      const std::unique_ptr<ContextFile> f = ContextFile::parse(blob->data(), blob->size(), *found[i]);
      const ContextMeta& m = f->meta();
      if (m.model_fingerprint != identity_.model_fingerprint ||
          m.tokenizer_fingerprint != identity_.tokenizer_fingerprint || m.kv_type != options.kv_type ||
          m.press != key || m.pressed != options.press.compresses()) {
        continue;
      }
      auto seq = std::make_unique<Sequence>(model, n_ctx, pool, options);
      const std::vector<int32_t>& held = f->tokens();
      if (held.size() > static_cast<size_t>(n_ctx)) continue;
      seq->adopt(f->cache(model.hparams().layer_window), held, f->logits(), m.pressed ? std::span<const WindowQueries>{} : f->windows());
      PromptCache one;
      one.put(key, std::move(seq));
      PromptCache::Hit hit = one.take(key, prompt, kBlock);
      if (!hit.seq) continue;
      return hit;
    } catch (const std::exception& e) {
      fmt::print(stderr, "context store {}: {} is not usable: {}\n", blobs_->describe(), *found[i], e.what());
    }
  }
  return {};
}

}  // namespace snapkv

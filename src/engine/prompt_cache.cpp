#include "engine/prompt_cache.h"

#include <algorithm>

namespace snapkv {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<size_t>(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

int PromptCache::serves(const Entry& e, std::span<const int32_t> prompt) {
  const std::vector<int32_t>& held = e.seq->tokens();
  if (prompt.size() < 2) return 0;
  const size_t shared = std::min(common_prefix(held, prompt), prompt.size() - 1);
  if (e.seq->compressor() && shared < held.size()) return 0;
  // A prefix whose sliding-window entries were dropped as the state grew past it serves nothing.
  if (shared < held.size() && !e.seq->kv().can_resume_at(static_cast<int32_t>(shared))) return 0;
  return static_cast<int>(shared);
}

int PromptCache::peek(const std::string& key, std::span<const int32_t> prompt) const {
  int best = 0;
  for (const Entry& e : entries_) {
    if (e.key == key) best = std::max(best, serves(e, prompt));
  }
  return best;
}

PromptCache::Hit PromptCache::take(const std::string& key, std::span<const int32_t> prompt, int min_tokens) {
  auto best = entries_.end();
  int n_best = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    const int n = serves(*it, prompt);
    if (n > n_best) {
      best = it;
      n_best = n;
    }
  }
  if (best == entries_.end() || n_best < std::max(1, min_tokens)) return {};
  if (static_cast<size_t>(n_best) < best->seq->tokens().size()) {
    // A prefix of a state without a press: copied, the entry stays (and is now the most recent).
    entries_.splice(entries_.begin(), entries_, best);
    return {best->seq->prefix_copy(n_best), n_best};
  }
  Hit hit{std::move(best->seq), n_best};
  bytes_ -= best->bytes;
  entries_.erase(best);
  return hit;
}

PromptCache::Hit PromptCache::copy_whole(const std::string& key, std::span<const int32_t> prompt, int min_tokens,
                                         size_t max_bytes) {
  auto best = entries_.end();
  int n_best = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int n = serves(*it, prompt);
    if (it->key == key && !it->seq->compressor() && n > n_best && static_cast<size_t>(n) == it->seq->tokens().size() &&
        it->bytes <= max_bytes) {
      best = it;
      n_best = n;
    }
  }
  if (best == entries_.end() || n_best < std::max(1, min_tokens)) return {};
  entries_.splice(entries_.begin(), entries_, best);
  return {best->seq->prefix_copy(n_best), n_best};
}

void PromptCache::put(std::string key, std::unique_ptr<Sequence> seq) {
  const size_t bytes = seq->held_bytes();
  bytes_ += bytes;
  entries_.push_front({std::move(key), std::move(seq), bytes});
}

void PromptCache::evict_to(size_t budget) {
  while (bytes_ > budget && !entries_.empty()) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

}  // namespace snapkv

#pragma once
// The server's prompt cache: the states of finished sequences (their KV cache, tokens and next-
// token logits), kept so that a request starting with the same tokens resumes from one instead
// of prefilling them again. Entries are keyed by the press options and KV type (one model per
// scheduler) and their tokens:
//   - a state without a press serves any request that shares a prefix of its tokens: a copy cut
//     to the shared prefix (the entry stays for other requests), or the entry itself when the
//     request starts with all of its tokens;
//   - a pressed state serves only a request that starts with all of its tokens (a conversation's
//     next turn): the new tokens are then pressed together with the kept ones, as a session does
//     across turns. Its other prefixes no longer exist.
// The owner bounds it by bytes and evicts the least recently used entries first. Not
// thread-safe: the scheduler's loop thread owns it.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>

#include "engine/sequence.h"

namespace snapkv {

// The longest common prefix of two token lists.
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

class PromptCache {
 public:
  struct Hit {
    std::unique_ptr<Sequence> seq;  // null on a miss
    int n_cached = 0;               // the prompt's first tokens it holds
  };
  // The state that holds most of prompt's first tokens (at most all but the last, which must go
  // through the model for the next token's logits), at least min_tokens of them.
  Hit take(const std::string& key, std::span<const int32_t> prompt, int min_tokens);
  // A copy of the longest state without a press whose tokens all begin prompt (and leave at least
  // its last token), at least min_tokens of them, of at most max_bytes; the entry stays. For a
  // request with a press, which presses the copy with its own tokens.
  Hit copy_whole(const std::string& key, std::span<const int32_t> prompt, int min_tokens, size_t max_bytes);
  // The most of prompt's first tokens take() would serve (0: none), without touching anything.
  int peek(const std::string& key, std::span<const int32_t> prompt) const;
  void put(std::string key, std::unique_ptr<Sequence> seq);
  // Drops least recently used entries until bytes() <= budget.
  void evict_to(size_t budget);
  size_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string key;
    std::unique_ptr<Sequence> seq;
    size_t bytes;
  };
  // The tokens entry e serves of prompt (0: none).
  static int serves(const Entry& e, std::span<const int32_t> prompt);
  std::list<Entry> entries_;  // most recently used first
  size_t bytes_ = 0;
};

}  // namespace snapkv

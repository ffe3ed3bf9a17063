#pragma once
// The prompt cache's second level: finished sequences' states saved as context files
// (kv/context_file.h) in a BlobStore (a directory or Redis) that outlives the server and may be
// shared by several servers of the same model. Looked up when the server's own cache misses:
//   state  "snapkv:1:state:<hash of press, KV type and all its tokens>" -> the context file
//   index  "snapkv:1:index:<hash of press, KV type and its first k tokens>" -> the state's key,
//          for every k a multiple of kBlock, so that a request finds the longest stored prefix of
//          its tokens with one round trip.
// The same rules as PromptCache decide what a state serves; a state's file is checked like any
// context file (checksums, the model's and tokenizer's fingerprints) before it is used, and one
// that fails is a miss. Saves run on a background thread; what does not keep up is dropped.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/prompt_cache.h"
#include "io/blob_store.h"
#include "kv/context_file.h"

namespace snapkv {

class StateStore {
 public:
  static constexpr int kBlock = 256;
  // identity: the model's fingerprints, name and shapes, as a context file's META holds them.
  StateStore(std::unique_ptr<BlobStore> blobs, const ContextMeta& identity);
  ~StateStore();  // finishes the saves begun

  // Saves a state (an encoded copy is taken now) of at least kBlock tokens; others are not saved.
  void save(const std::string& key, const Sequence& seq);
  // Like PromptCache::take, from the store: a session with `options` rebuilt from the state that
  // serves most of prompt's first tokens (at least kBlock). A miss when none does, when the store
  // is away, or when the state's file does not check out.
  PromptCache::Hit find(const std::string& key, std::span<const int32_t> prompt, const Decoder& model, int n_ctx,
                        ThreadPool& pool, const SequenceOptions& options);

 private:
  std::string index_key(const std::string& key, std::span<const int32_t> tokens) const;
  void write_loop();

  std::unique_ptr<BlobStore> blobs_;
  ContextMeta identity_;

  struct Write {
    std::string key;
    std::vector<uint8_t> value;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Write> writes_;
  size_t pending_bytes_ = 0;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace snapkv

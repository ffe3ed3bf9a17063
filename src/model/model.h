#pragma once
// An architecture is a forward pass over ops with weights viewed in place from a GGUF file.
// New architectures implement Model in one file and add one line to the registry (registry.cpp).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/kv_store.h"
#include "ops/rope.h"
#include "util/thread_pool.h"

namespace snapkv {

struct ModelHparams {
  std::string arch;
  std::string name;
  int n_layer = 0;
  int n_embd = 0;
  int n_ff = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  RopeParams rope;
};

enum class LogitsMode { kNone, kLast, kAll };

// Watches a forward call layer by layer (KV compression, progress). Prefill is layer-major, so
// when layer_done(il) is called, layer il's keys and values of every token are in the KV store.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  // A chunk of n_tok post-RoPE queries [n_tok, n_head, head_dim] of layer il, called after the
  // chunk's keys and values were appended to kv and before its attention runs.
  virtual void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, KvStore& kv) {}
  // Layer il has processed every token of the call.
  virtual void layer_done(int il) {}
};

class Model {
 public:
  virtual ~Model() = default;
  const ModelHparams& hparams() const { return hp_; }
  // Bytes of weight data viewed from the file (not copied).
  virtual size_t weight_bytes() const = 0;

  // Runs tokens at the given positions through every layer, appending their keys and values to
  // kv. logits receives [n_tok, n_vocab] (kAll), [1, n_vocab] for the last token (kLast), or
  // nothing. Positions must continue after what kv holds. observer may be null.
  virtual void forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                       KvStore& kv, LogitsMode mode, std::vector<float>& logits,
                       ThreadPool& pool, LayerObserver* observer) const = 0;

 protected:
  ModelHparams hp_;
};

// Builds the model for general.architecture, or Error(kUnsupported) naming the architecture.
std::unique_ptr<Model> load_model(const GgufFile& file);

}  // namespace snapkv

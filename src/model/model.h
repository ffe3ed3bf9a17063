#pragma once
// A model is a forward pass over ops with weights viewed in place from a GGUF file. Architectures
// share one decoder (transformer.h); each declares what differs in one file and one line of the
// registry (registry.cpp).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/kv_store.h"
#include "ops/matmul.h"
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
  int n_ctx = 0;           // the longest context the model is loaded for (DecoderOptions::n_ctx)
  std::string longrope;    // the LongRoPE factors in use, "long" (n_ctx past the original context) or "short"; "": none
  float rms_eps = 1e-5f;
  RopeParams rope;  // of the global layers
  // Per layer: the sliding attention window (a query sees the last `window` positions; its KV
  // cache needs no more), 0 for a layer that sees the whole context.
  std::vector<int32_t> layer_window;
};

enum class LogitsMode { kNone, kLast, kAll };

// Tokens per chunk inside a layer during prefill: the largest append to a KV cache but for
// batched decode's rows of at most kMaxRowTokens.
inline constexpr int64_t kPrefillChunk = 256;

// Choices made when a model is loaded.
struct DecoderOptions {
  // kQ8: decode steps multiply Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K weights by activations
  // rounded to 8 bits, as
  // llama.cpp does (faster where the f32 kernel is limited by arithmetic, less exact; matmul.h);
  // kQ16 to 16 bits.
  // Like every matmul of up to 8 tokens, so a prompt (or its last chunk) that short does too;
  // longer prefill keeps f32.
  MatmulActivations decode_activations = MatmulActivations::kF32;
  // The longest context sequences of this model use, 0: its training context. Picks LongRoPE's
  // long or short rope factors (Phi-3 128K) as llama.cpp picks them for its context.
  int n_ctx = 0;
};

// Watches a forward call layer by layer (KV compression, progress). Prefill is layer-major, so
// when layer_done(il) is called, layer il's keys and values of every token are in the KV store.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  // A chunk of n_tok post-RoPE queries [n_tok, n_head, head_dim] of layer il, called once the
  // chunk's keys and values were appended to kv and its attention ran over kv.layer(il); lse
  // [n_tok, n_head] holds each query row's log-sum-exp of scaled scores (see attention()).
  virtual void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float* lse, KvStore& kv) {}
  // Layer il has processed every token of the call.
  virtual void layer_done(int il) {}
};

// A forward call run a piece at a time, so that a long prefill can be interleaved with other
// sequences' decode steps (the server's scheduler). Each step() runs one chunk of tokens through
// one layer. The tokens, positions, kv, logits, pool and observer given to begin_forward must
// outlive the pass.
class ForwardPass {
 public:
  virtual ~ForwardPass() = default;
  // Runs the next piece; returns true once the call is complete (logits written).
  virtual bool step() = 0;
};

// One sequence's next tokens in a batched decode step: usually one token, or a few (up to
// kMaxRowTokens: speculative decoding's verification), at positions pos, pos + 1, ...; the
// sequence's own cache and observer (may be null).
inline constexpr int kMaxRowTokens = 17;  // a sampled token and up to 16 drafts
struct DecodeRow {
  std::span<const int32_t> tokens;
  int32_t pos = 0;
  KvStore* kv = nullptr;
  LayerObserver* observer = nullptr;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  const ModelHparams& hparams() const { return hp_; }
  const DecoderOptions& options() const { return opts_; }
  // Bytes of weight data viewed from the file (not copied).
  virtual size_t weight_bytes() const = 0;

  // Runs tokens at the given positions through every layer, appending their keys and values to
  // kv. logits receives [n_tok, n_vocab] (kAll), [1, n_vocab] for the last token (kLast), or
  // nothing. Positions must continue after what kv holds. observer may be null.
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> positions, KvStore& kv,
               LogitsMode mode, std::vector<float>& logits, ThreadPool& pool,
               LayerObserver* observer) const {
    const auto pass = begin_forward(tokens, positions, kv, mode, logits, pool, observer);
    while (!pass->step()) {
    }
  }
  // The same call, to be run by stepping the returned pass until it is complete.
  virtual std::unique_ptr<ForwardPass> begin_forward(std::span<const int32_t> tokens,
                                                     std::span<const int32_t> positions, KvStore& kv,
                                                     LogitsMode mode, std::vector<float>& logits,
                                                     ThreadPool& pool, LayerObserver* observer) const = 0;

  // The next tokens of several sequences, each with its own cache: every weight matrix is read
  // once for the whole batch. logits receives [tokens of all rows, n_vocab], row by row. Each
  // row's observer sees its queries and layer_done like a forward call of its tokens.
  virtual void decode_batch(std::span<const DecodeRow> rows, std::vector<float>& logits,
                            ThreadPool& pool) const = 0;

  // Layer il's attention output projection, dequantized to f32: [n_embd rows][n_head * head_dim].
  virtual std::vector<float> out_proj(int il) const = 0;

 protected:
  ModelHparams hp_;
  DecoderOptions opts_;
};

// Builds the model for general.architecture, or Error(kUnsupported) naming the architecture.
// pool, if given, shares the preparation of the weights (their interleaved copies).
std::unique_ptr<Decoder> load_decoder(const GgufFile& file, const DecoderOptions& options = {}, ThreadPool* pool = nullptr);
// The general.architecture names load_decoder accepts.
std::vector<std::string> decoder_architectures();

}  // namespace snapkv

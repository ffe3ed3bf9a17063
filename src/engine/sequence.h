#pragma once
// One sequence: its tokens, their positions and its KV cache, advanced by prefill and decode.
// With a compressing press, each prompt prefill leaves every layer's cache compressed.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kv/compressor.h"
#include "kv/kv_cache.h"
#include "kv/press_inputs.h"
#include "model/model.h"
#include "snapkv/press.h"

namespace snapkv {

struct SequenceOptions {
  SequenceOptions(KvType type = KvType::kF16, PressConfig p = {}, const PressInputs* in = nullptr)
      : kv_type(type), press(std::move(p)), inputs(in) {}

  KvType kv_type;
  PressConfig press;  // "full" by default
  // The model's press_inputs(), which presses keeping token runs or reconstructing the context
  // need; it must outlive the sequence.
  const PressInputs* inputs;
};

class Sequence {
 public:
  // n_ctx: the most tokens this sequence may hold (prompt and generated).
  Sequence(const Decoder& model, int n_ctx, ThreadPool& pool, const SequenceOptions& options = {});

  // Runs tokens through the model after what the session holds; afterwards logits() is the
  // distribution for the next token. With compress, the press compresses every layer once it is
  // done (tokens held before are re-scored with the new ones; a press that reconstructs the
  // context compresses them all once the tokens are in and it has). Error(kOutOfRange) if the
  // context would overflow. progress(layers_done, n_layers) is called after each layer when set.
  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress = {},
               bool compress = true);
  // One generated token through the model (never compressed, except by re-compression).
  void decode(int32_t token);

  // The same prefill run a piece at a time (one chunk of tokens through one layer per step), so
  // a scheduler can interleave it with other sessions' decode steps: begin_prefill, then
  // prefill_step() until it returns true. Same semantics and errors as prefill(); until the
  // prefill is complete, every other call that runs the model throws Error(kInvalidArgument).
  void begin_prefill(std::span<const int32_t> tokens, bool compress = true);
  bool prefill_step();
  bool prefilling() const { return pass_ != nullptr; }

  // One generated token for each session, in one batched forward step: the weights are read once
  // for all of them. The sessions must share one model and thread pool, and each must have room
  // for one more token. Same result per session as decode(token).
  static void decode_batch(std::span<Sequence* const> sessions, std::span<const int32_t> tokens);
  // The same with a few tokens per session (1 to kMaxRowTokens each, model.h): speculative
  // decoding's verification passes of several sequences at once. Returns every token's logits
  // [tokens, n_vocab], session after session; each session's logits() is its last row. Same
  // result per session as prefill_all_logits(its tokens).
  static std::vector<float> decode_batch(std::span<Sequence* const> sessions,
                                         std::span<const std::span<const int32_t>> tokens);

  // Logits of every token [n, n_vocab] (perplexity, fidelity, reference checks, and speculative
  // decoding's verification of drafted tokens); never compressed.
  std::vector<float> prefill_all_logits(std::span<const int32_t> tokens);
  // Keeps the first n tokens (n <= n_past) and drops the later ones' cache entries and window
  // queries (speculative decoding's rejected drafts). logits() becomes next_logits (one row; the
  // distribution after the n-th token), or empty when none is given: then the next call must run
  // a token. Positions dropped by a press stay dropped.
  void truncate(int n, std::span<const float> next_logits = {});

  std::span<const float> logits() const { return logits_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int n_past() const { return static_cast<int>(tokens_.size()); }
  int n_ctx() const { return n_ctx_; }
  const KvCache& kv() const { return kv_; }
  // Bytes the uncompressed cache would hold for the same tokens (a prefill's included while it runs).
  size_t kv_full_bytes() const;
  // Memory the session holds: its cache's allocation, window queries and logits.
  size_t held_bytes() const;
  // Null when the press is "full".
  const Compressor* compressor() const { return compressor_.get(); }
  const Decoder& model() const { return model_; }
  void reset();
  // Starts this session from a cache built elsewhere (a RecordedPrefill's pressed copy, a context
  // file, a server's cached state): the session takes the cache, the tokens it holds (at positions
  // 0..n-1, whatever entries a press dropped), the logits for the next token and, when given, each
  // layer's last queries (windows()), as if it had prefilled the tokens itself. A session with a
  // press and windows then presses the whole cache at its next prefill, with the window sliding on
  // from the given queries (Error(kUnsupported) when they are fewer than its window or the press
  // needs every query's attention); a session with a press and no windows takes a cache its own
  // press made and presses it again at its next prefill with that prefill's queries, as it would
  // have had it made the cache itself. Error(kInvalidArgument) when the cache's layers, heads,
  // head size or type differ from this session's, when tokens is empty or longer than n_ctx, or
  // when last_logits is not one row of n_vocab.
  void adopt(KvCache cache, std::span<const int32_t> tokens, std::span<const float> last_logits,
             std::span<const WindowQueries> windows = {});
  // A session without a press keeps each layer's last `press.window` queries (the press options'
  // window, 32 by default) so that its state can be saved and pressed later; empty otherwise.
  std::vector<WindowQueries> windows() const;
  // A new session without a press holding this one's first n tokens (1 <= n <= n_past; a server's
  // cached prompt shared by another request); the logits too when n == n_past, else the next call
  // must be a prefill. Error(kInvalidArgument) for a session with a press or in a prefill.
  std::unique_ptr<Sequence> prefix_copy(int n) const;
  // This session's state (no press, idle, holding its window) moved into a new session with press,
  // which presses it at its next prefill as one prefill of all the tokens would; this one is left
  // empty (also on Error(kUnsupported): a press that needs a wider window or every query's
  // attention).
  std::unique_ptr<Sequence> hand_to(const PressConfig& press);

 private:
  void run(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
           const std::function<void(int, int)>& progress);
  // Checks and starts a forward call of tokens after what the session holds; finish() ends it.
  void start(std::span<const int32_t> tokens, LogitsMode mode, bool compress,
             const std::function<void(int, int)>& progress);
  void finish();
  void check_idle() const;
  // Whether a prefill with compress runs the press's context reconstruction (kvzip).
  bool reconstructs(bool compress) const;
  // What watches the layers: the compressor, else the window recorder.
  LayerObserver* observer() const;
  // Tells them a forward call of these tokens after those held begins.
  void begin_call(std::span<const int32_t> tokens, bool compress);

  const Decoder& model_;
  int n_ctx_;
  ThreadPool& pool_;
  KvCache kv_;
  const PressInputs* inputs_;
  std::unique_ptr<Compressor> compressor_;
  std::unique_ptr<LayerRecorder> window_;  // sessions without a press
  bool extend_next_ = false;               // the next call continues an adopted whole prompt
  bool prefilled_early_ = false;           // begin_prefill ran a reconstructing prefill whole
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
  // The forward call in progress (begin_prefill) and what it reads.
  std::unique_ptr<ForwardPass> pass_;
  std::unique_ptr<LayerObserver> observer_;
  std::vector<int32_t> pass_tokens_, pass_pos_;
};

}  // namespace snapkv

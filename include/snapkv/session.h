#pragma once
// One sequence on a model: its tokens, their positions and its KV cache, advanced by prefill and
// decode. With a compressing press, each prompt prefill leaves every layer's cache compressed
// (each layer as soon as all prompt tokens passed through it); decoding appends to that cache.
//
//   snapkv::Session s(model, {.n_ctx = 8192, .press = {.press = "snapkv", .capacity = 1024}});
//   auto stats = snapkv::generate(s, model.tokenizer().encode(text, true, false), params, on_token);
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "snapkv/generate.h"
#include "snapkv/model.h"
#include "snapkv/press.h"
#include "snapkv/types.h"

namespace snapkv {

struct SessionOptions {
  int n_ctx = 0;  // tokens this sequence may hold, prompt and generated; 0: the model's (ModelOptions::n_ctx)
  KvType kv_type = KvType::kF16;
  PressConfig press;  // "full" (no compression) by default

  std::string validate() const;
};

// progress(layers_done, n_layers), called after each layer of a prefill.
using PrefillProgress = std::function<void(int, int)>;

class Session {
 public:
  // Error(kInvalidArgument) for invalid options or an n_ctx above the model's context.
  Session(const Model& model, const SessionOptions& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Runs tokens through the model after what the session holds; then logits() is the
  // distribution of the next token. With compress, the press compresses every layer (entries
  // held before are re-scored with the new ones). Error(kOutOfRange) when the context would
  // overflow, Error(kInvalidArgument) for a token outside the vocabulary.
  void prefill(std::span<const int32_t> tokens, const PrefillProgress& progress = {}, bool compress = true);
  // One generated token through the model (appended, never compressed).
  void decode(int32_t token);
  // One token for each session in one batched step (the weights are read once for all). The
  // sessions must share one model; same result per session as decode().
  static void decode_batch(std::span<Session* const> sessions, std::span<const int32_t> tokens);
  // Clears the tokens and the cache.
  void reset();
  // A new session on the same model holding a copy of this one's tokens, cache and next-token
  // logits: decoding either leaves the other as it was (e.g. B copies of one prefilled prompt for
  // a batched decode). The copy's press is "full": what it holds stays as it is, and later
  // prefills into it are not compressed.
  Session fork() const;

  std::span<const float> logits() const;
  const std::vector<int32_t>& tokens() const;
  int n_past() const;
  int n_ctx() const;
  const SessionOptions& options() const;
  const Model& model() const;

  size_t kv_bytes() const;       // the cache as held (compressed)
  size_t kv_full_bytes() const;  // what the uncompressed cache would hold for the same tokens
  // Entries the last compression kept per layer; empty when nothing was compressed.
  std::vector<LayerKept> kept() const;

  struct Impl;
  Impl& impl() { return *impl_; }  // for the library's own layers
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Prefills prompt, then samples and decodes until params.max_tokens, an end-of-generation token
// (params.stop_at_eog) or on_token returning false. on_token receives each token with its
// complete UTF-8 text. With params.speculation, drafted tokens are verified in one forward pass
// each; SpecMode::kDraft drafts with draft, a session on a model of the same vocabulary (its own
// press allowed), which the call advances and rolls back. Error(kInvalidArgument) for invalid
// params or a draft model of another vocabulary.
GenerateStats generate(Session& session, std::span<const int32_t> prompt, const GenerateParams& params,
                       const TokenCallback& on_token, const PrefillProgress& progress = {}, Session* draft = nullptr);

// Several sessions of one model: each prefills its prompt (one after the other), then all decode
// together, one batched step per token, each ending as generate() ends. With speculation (prompt
// lookup; a draft model is Error(kInvalidArgument)) the drafts go into the same steps, in the
// lanes the weights' last pass leaves free. on_token(b, id, text) as
// generate()'s, for sessions[b]; returning false ends that session. Stats per session; decode_s
// runs from the first sample to that session's end.
std::vector<GenerateStats> generate_batch(std::span<Session* const> sessions,
                                          std::span<const std::vector<int32_t>> prompts, const GenerateParams& params,
                                          const BatchTokenCallback& on_token);

}  // namespace snapkv

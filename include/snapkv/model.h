#pragma once
// A GGUF model loaded for inference: its weights (viewed from the file, not copied), its
// tokenizer, the chat template it was tuned with and the threads that run it.
//
//   snapkv::Model model = snapkv::Model::load("model.gguf", {.threads = 2});
//   snapkv::Session session(model, {.press = {.press = "snapkv", .capacity = 1024}});
//
// A Model is cheap to copy (copies share the loaded model) and stays alive while a Session or a
// copy uses it. Its const methods may be called from several threads; the sessions of one model
// share its thread pool, so run them from one thread at a time (or use snapkv::Scheduler).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "snapkv/chat.h"
#include "snapkv/sampling.h"
#include "snapkv/tokenizer.h"
#include "snapkv/types.h"

namespace snapkv {

struct ModelOptions {
  int threads = 0;  // threads that run the model; 0: one per hardware thread
  // What decode steps multiply Q4_0 / Q4_1 / Q8_0 weights by (types.h). The CLI defaults to kQ16.
  MatmulActivations decode_activations = MatmulActivations::kF32;
  // The longest context its sessions use (their default n_ctx), 0: the model's training context.
  // A model with LongRoPE factors (Phi-3 128K) rotates by its long factors when this is past its
  // original context, by its short ones otherwise, as llama.cpp does for its context size.
  int n_ctx = 0;

  std::string validate() const;
};

// "f32", "q16", "q8" and back; parse returns false for anything else.
bool parse_matmul_activations(const std::string& s, MatmulActivations& out);
const char* matmul_activations_name(MatmulActivations a);

struct ModelInfo {
  std::string path;
  std::string arch;  // general.architecture
  std::string name;  // general.name
  int n_layer = 0, n_embd = 0, n_ff = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;      // the context the model was trained for
  int n_ctx = 0;            // the longest context its sessions use (ModelOptions::n_ctx)
  std::string longrope;     // the LongRoPE factors in use: "long" (n_ctx is past the original context), "short", "": none
  // Per layer: its sliding attention window (a query sees the last `window` positions), 0 for a
  // layer that sees the whole context. Presses compress only the latter; a window layer's cache
  // keeps its window.
  std::vector<int32_t> layer_window;
  size_t weight_bytes = 0;  // weight data used by the forward pass
  // The sampling the model's authors recommend: general.sampling.{temp, top_k, top_p, min_p,
  // penalty_repeat, penalty_last_n} where the file has them, the rest llama.cpp's server defaults
  // (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05). What the server uses when a request
  // gives no sampling fields.
  SamplingParams recommended_sampling;
  bool sampling_from_file = false;  // at least one general.sampling.* key was found
};

class Model {
 public:
  // Opens, validates and loads a GGUF file. Error(kBadFile) for a missing, truncated or corrupt
  // file; Error(kUnsupported) naming the architecture or tensor type this engine does not run;
  // Error(kInvalidArgument) for bad options.
  static Model load(const std::string& path, const ModelOptions& options = {});

  const ModelInfo& info() const;
  const ModelOptions& options() const;
  const Tokenizer& tokenizer() const;
  // The template detected from the file's tokenizer.chat_template (chat.h).
  const ChatTemplate& chat_template() const;
  // The detected template, or the one `name` names when it is not empty (chat_template_from_name).
  ChatTemplate pick_chat_template(const std::string& name) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }  // for the library's own layers

 private:
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// The available architectures (general.architecture values), for listings and error messages.
std::vector<std::string> supported_architectures();

}  // namespace snapkv

#pragma once
// What the public Model and Session hold: the engine's objects behind the API (snapkv/model.h,
// snapkv/session.h). Only src/api and the layers that serve the API (eval, server) include it.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/sequence.h"
#include "kv/context_file.h"
#include "kv/press_inputs.h"
#include "io/gguf.h"
#include "model/model.h"
#include "snapkv/model.h"
#include "snapkv/session.h"
#include "util/thread_pool.h"

namespace snapkv {

struct Model::Impl {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Tokenizer> tokenizer;
  PressInputs press_inputs;  // press_inputs(*tokenizer)
  ChatTemplate chat_template;
  ModelInfo info;
  ModelOptions options;
  uint64_t fingerprint = 0, tokenizer_fingerprint = 0;  // io/gguf_fingerprint.h
  // Mutable: running the model from a const Model uses its threads (one user at a time).
  mutable std::unique_ptr<ThreadPool> pool;

  ThreadPool& threads() const { return *pool; }
};

struct Session::Impl {
  Model model;  // keeps the model alive
  SessionOptions options;
  Sequence seq;

  Impl(const Model& m, const SessionOptions& o, int n_ctx)
      : model(m), options(o), seq(*m.impl().decoder, n_ctx, m.impl().threads(), {o.kv_type, o.press, &m.impl().press_inputs}) {}
};

// What a context file of this model says about it: its fingerprints, name and shapes (the rest
// of ContextMeta left default).
ContextMeta context_identity(const Model& model);

}  // namespace snapkv

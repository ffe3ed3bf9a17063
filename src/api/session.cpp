#include "api/impl.h"
#include "engine/generate.h"
#include "util/error.h"

namespace snapkv {

std::string SessionOptions::validate() const {
  if (n_ctx < 0) return "the context size must be positive";
  return press.validate();
}

namespace {
int checked_n_ctx(const Model& model, const SessionOptions& options) {
  if (const std::string err = options.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const ModelInfo& info = model.info();
  const int n_ctx = options.n_ctx > 0 ? options.n_ctx : info.n_ctx;
  if (n_ctx > info.n_ctx) {
    fail(ErrorKind::kInvalidArgument, "a context of {} tokens exceeds the {} the model was loaded for (its training "
         "context is {})", n_ctx, info.n_ctx, info.n_ctx_train);
  }
  return n_ctx;
}
}  // namespace

Session::Session(const Model& model, const SessionOptions& options)
    : impl_(std::make_unique<Impl>(model, options, checked_n_ctx(model, options))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

void Session::prefill(std::span<const int32_t> tokens, const PrefillProgress& progress, bool compress) {
  impl_->seq.prefill(tokens, progress, compress);
}

void Session::decode(int32_t token) { impl_->seq.decode(token); }

void Session::decode_batch(std::span<Session* const> sessions, std::span<const int32_t> tokens) {
  std::vector<Sequence*> seqs;
  seqs.reserve(sessions.size());
  for (Session* s : sessions) seqs.push_back(&s->impl_->seq);
  Sequence::decode_batch(seqs, tokens);
}

void Session::reset() { impl_->seq.reset(); }

Session Session::fork() const {
  SessionOptions o = impl_->options;
  o.n_ctx = impl_->seq.n_ctx();
  o.press = PressConfig{};  // the engine adopts a cache only into a session without a press
  Session copy(impl_->model, o);
  const Sequence& seq = impl_->seq;
  if (!seq.tokens().empty()) copy.impl_->seq.adopt(seq.kv(), seq.tokens(), seq.logits(), seq.windows());
  return copy;
}
std::span<const float> Session::logits() const { return impl_->seq.logits(); }
const std::vector<int32_t>& Session::tokens() const { return impl_->seq.tokens(); }
int Session::n_past() const { return impl_->seq.n_past(); }
int Session::n_ctx() const { return impl_->seq.n_ctx(); }
const SessionOptions& Session::options() const { return impl_->options; }
const Model& Session::model() const { return impl_->model; }
size_t Session::kv_bytes() const { return impl_->seq.kv().bytes(); }
size_t Session::kv_full_bytes() const { return impl_->seq.kv_full_bytes(); }

std::vector<LayerKept> Session::kept() const {
  const Compressor* c = impl_->seq.compressor();
  return c ? c->kept() : std::vector<LayerKept>{};
}

GenerateStats generate(Session& session, std::span<const int32_t> prompt, const GenerateParams& params,
                       const TokenCallback& on_token, const PrefillProgress& progress, Session* draft) {
  if (draft && draft->model().impl().tokenizer_fingerprint != session.model().impl().tokenizer_fingerprint) {
    fail(ErrorKind::kInvalidArgument, "the draft model {} does not use the vocabulary of {}", draft->model().info().name,
         session.model().info().name);
  }
  return generate(session.impl().seq, session.model().tokenizer(), prompt, params, on_token, progress,
                  draft ? &draft->impl().seq : nullptr);
}

std::vector<GenerateStats> generate_batch(std::span<Session* const> sessions,
                                          std::span<const std::vector<int32_t>> prompts, const GenerateParams& params,
                                          const BatchTokenCallback& on_token) {
  std::vector<Sequence*> seqs;
  for (Session* s : sessions) {
    if (&s->model().impl() != &sessions[0]->model().impl()) {
      fail(ErrorKind::kInvalidArgument, "generate_batch: the sessions must share one model");
    }
    seqs.push_back(&s->impl().seq);
  }
  if (seqs.empty()) return {};
  return generate_batch(seqs, sessions[0]->model().tokenizer(), prompts, params, on_token);
}

}  // namespace snapkv

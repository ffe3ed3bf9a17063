#include "snapkv/context.h"

#include "api/impl.h"
#include "kv/context_file.h"
#include "util/error.h"

namespace snapkv {
namespace {

ContextInfo info_of(const ContextFile& f) {
  const ContextMeta& m = f.meta();
  ContextInfo i;
  i.model_name = m.model_name;
  i.press = m.press;
  i.pressed = m.pressed;
  i.kv_type = kv_type_name(m.kv_type);
  i.n_tokens = static_cast<int>(f.tokens().size());
  i.entries = f.entries();
  i.file_bytes = f.size();
  i.question_prefix = m.question_prefix;
  i.question_suffix = m.question_suffix;
  i.chat = m.chat;
  return i;
}

// The file was made with this model and tokenizer, and its shapes are the model's.
void check_model(const ContextFile& f, const Model& model) {
  const ContextMeta& m = f.meta();
  const Model::Impl& mi = model.impl();
  const ModelInfo& hp = model.info();
  if (m.model_fingerprint != mi.fingerprint) {
    fail(ErrorKind::kBadFile, "{}: made with another model ({}) or another quantization of it, not with {}; compress "
         "the document again with this model", f.label(), m.model_name, hp.path);
  }
  if (m.tokenizer_fingerprint != mi.tokenizer_fingerprint) {
    fail(ErrorKind::kBadFile, "{}: made with another tokenizer than {}'s", f.label(), hp.path);
  }
  if (m.n_layer != hp.n_layer || m.n_head_kv != hp.n_head_kv || m.head_dim != hp.head_dim || m.n_head != hp.n_head ||
      m.n_vocab != hp.n_vocab) {
    fail(ErrorKind::kBadFile, "{}: its cache's shape is not {}'s", f.label(), hp.path);
  }
}

}  // namespace

ContextMeta context_identity(const Model& model) {
  const ModelInfo& hp = model.info();
  ContextMeta m;
  m.model_fingerprint = model.impl().fingerprint;
  m.tokenizer_fingerprint = model.impl().tokenizer_fingerprint;
  m.model_name = hp.name.empty() ? hp.path : hp.name;
  m.n_layer = hp.n_layer;
  m.n_head_kv = hp.n_head_kv;
  m.head_dim = hp.head_dim;
  m.n_head = hp.n_head;
  m.n_vocab = hp.n_vocab;
  return m;
}

size_t save_context(const Session& session, const std::string& path, const ContextInfo& notes) {
  const Sequence& seq = session.impl().seq;
  if (seq.prefilling()) fail(ErrorKind::kInvalidArgument, "cannot save a session in the middle of a prefill");
  if (seq.tokens().empty()) fail(ErrorKind::kInvalidArgument, "cannot save a session that holds no tokens");
  if (seq.kv().replicate() != 1) {
    fail(ErrorKind::kUnsupported, "a per_query_head cache cannot be saved (its heads are copied per query head)");
  }
  const Model& model = session.model();
  const ModelInfo& hp = model.info();
  ContextMeta m = context_identity(model);
  m.kv_type = seq.kv().type();
  m.replicate = seq.kv().replicate();
  // Whole: every head holds every token (a press may have kept all of a short prompt).
  const int64_t whole_entries = static_cast<int64_t>(seq.n_past()) * hp.n_layer * hp.n_head_kv;
  m.pressed = seq.kv().entries() != whole_entries;
  m.press = !m.pressed ? "full" : seq.compressor() ? session.options().press.describe() : "pressed before it was loaded";
  m.question_prefix = notes.question_prefix;
  m.question_suffix = notes.question_suffix;
  m.chat = notes.chat;
  const std::vector<WindowQueries> windows = m.pressed ? std::vector<WindowQueries>{} : seq.windows();
  return write_context_file(path, m, seq.tokens(), seq.logits(), windows, seq.kv());
}

Session load_context(const Model& model, const std::string& path, SessionOptions options, ContextInfo* info) {
  return std::move(load_contexts(model, path, 1, options, info).front());
}

std::vector<Session> load_contexts(const Model& model, const std::string& path, int n, SessionOptions options,
                                   ContextInfo* info) {
  if (n < 1) fail(ErrorKind::kInvalidArgument, "load_contexts: {} sessions", n);
  const std::unique_ptr<ContextFile> f = ContextFile::open(path);
  check_model(*f, model);
  const ContextMeta& m = f->meta();
  if (m.pressed && options.press.compresses()) {
    fail(ErrorKind::kInvalidArgument, "{} is already pressed ({}) and is used as it is: give no press options with it",
         path, m.press);
  }
  if (options.press.compresses() && options.press.gqa == GqaReduce::kPerQueryHead) {
    fail(ErrorKind::kUnsupported, "gqa per_query_head cannot press a saved context (its cache holds one copy per KV head)");
  }
  options.kv_type = m.kv_type;
  std::vector<Session> sessions;
  for (int i = 0; i < n; ++i) {
    Session s(model, options);
    if (f->tokens().size() >= static_cast<size_t>(s.n_ctx())) {
      fail(ErrorKind::kOutOfRange, "{} holds {} tokens; the context of {} leaves no room for a question", path,
           f->tokens().size(), s.n_ctx());
    }
    s.impl().seq.adopt(f->cache(model.impl().decoder->hparams().layer_window), f->tokens(), f->logits(), f->windows());
    sessions.push_back(std::move(s));
  }
  if (info) *info = info_of(*f);
  return sessions;
}

ContextInfo inspect_context(const std::string& path) { return info_of(*ContextFile::open(path)); }

}  // namespace snapkv

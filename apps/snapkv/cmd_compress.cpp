// snapkv compress: prefill a document once, press it (or keep it whole with --kv-press full) and
// save the state as a context file that `snapkv run --context` and `snapkv chat --context` answer
// on without prefilling it again.
#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "cli_error.h"
#include "commands.h"
#include "context_prompt.h"
#include "kv_options.h"
#include "model_options.h"
#include "snapkv/context.h"
#include "snapkv/memory.h"
#include "snapkv/timer.h"

namespace snapkv::cli {
namespace {

struct CompressOptions {
  std::string model = kDefaultModel;
  PromptFlags in;
  std::string output;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ctx = 0;
  KvOptions kv{.press = {.press = "snapkv"}};
  ModelFlags model_flags;
};

int compress(const CompressOptions& o) {
  if (o.output.empty()) fail(ErrorKind::kInvalidArgument, "-o FILE is needed: where the context is saved");
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  if (o.ctx < 0) fail(ErrorKind::kInvalidArgument, "--ctx must be positive");
  SessionOptions so = o.kv.session_options();
  so.n_ctx = o.ctx;
  const std::string document = o.in.text();

  Timer load_timer;
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads, o.ctx));
  const ModelInfo& hp = model.info();
  fmt::print(stderr, "model: {} ({}), loaded in {:.2f} s, {} threads\n", hp.name, hp.arch, load_timer.seconds(),
             o.threads);
  const ContextPrompt cp = o.in.context(model, document);
  const std::vector<int32_t> ids = context_tokens(model, cp);
  Session session(model, so);
  if (ids.size() + 1 > static_cast<size_t>(session.n_ctx())) {
    fail(ErrorKind::kOutOfRange, "the document has {} tokens but --ctx is {} (the model allows up to {})", ids.size(),
         session.n_ctx(), hp.n_ctx_train);
  }
  fmt::print(stderr, "KV cache: {}, {}\n", kv_type_name(so.kv_type), so.press.describe());
  Timer prefill_timer;
  session.prefill(ids, [&](int done, int total) {
    if (ids.size() < 1024) return;
    fmt::print(stderr, "\rprefill {} tokens: layer {}/{}, {:.1f} s   ", ids.size(), done, total, prefill_timer.seconds());
    if (done == total) fmt::print(stderr, "\n");
  });
  const double prefill_s = prefill_timer.seconds();
  Timer save_timer;
  ContextInfo notes;
  notes.question_prefix = cp.question_prefix;
  notes.question_suffix = cp.question_suffix;
  notes.chat = cp.chat;
  const size_t bytes = save_context(session, o.output, notes);
  fmt::print(stderr,
             "saved {}: {} tokens | {} on disk | KV cache {} (full {}) | prefill {:.2f} s | save {:.3f} s | "
             "peak RSS {}\n",
             o.output, ids.size(), format_bytes(bytes), format_bytes(session.kv_bytes()),
             format_bytes(session.kv_full_bytes()), prefill_s, save_timer.seconds(), format_bytes(peak_rss_bytes()));
  return 0;
}

}  // namespace

Action add_compress(CLI::App& app) {
  auto o = std::make_shared<CompressOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  add_prompt_flags(app, o->in);
  app.add_option("-o,--output", o->output, "the context file to write (replaced atomically)");
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--ctx", o->ctx, "context size in tokens (default: the model's)");
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  return [o] { return compress(*o); };
}

}  // namespace snapkv::cli

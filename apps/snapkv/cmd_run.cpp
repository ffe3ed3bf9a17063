// snapkv run: tokenize a prompt (optionally through the model's chat template), prefill it,
// stream the answer, and end with one line of measurements.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_error.h"
#include "commands.h"
#include "kv_options.h"
#include "model_options.h"
#include "sampling_flags.h"
#include "text_file.h"
#include "snapkv/memory.h"
#include "snapkv/session.h"
#include "snapkv/timer.h"

namespace snapkv::cli {
namespace {

struct RunOptions {
  std::string model = kDefaultModel;
  std::string prompt;
  std::string prompt_file;
  bool chat = false;
  std::string system;
  std::string chat_template;
  int n_predict = 128;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ctx = 0;
  bool show_prompt = false;
  bool verbose = false;
  std::string question;
  bool question_agnostic = false;
  SamplingParams sampling;
  KvOptions kv;
  ModelFlags model_flags;
};

// -v: entries kept per layer by the last compression, over all KV heads.
void print_kept(const Session& session) {
  const std::vector<LayerKept> kept = session.kept();
  for (size_t il = 0; il < kept.size(); ++il) {
    const LayerKept& k = kept[il];
    fmt::print(stderr, "layer {:2}: kept {} / {} entries ({:.1f} %)\n", il, k.kept, k.total,
               100.0 * static_cast<double>(k.kept) / static_cast<double>(std::max<int64_t>(1, k.total)));
  }
}

int run(const RunOptions& o) {
  if (o.prompt.empty() == o.prompt_file.empty()) {
    fail(ErrorKind::kInvalidArgument, "give exactly one of -p TEXT or -f FILE");
  }
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampling = o.sampling;
  if (const std::string err = gp.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  SessionOptions so = o.kv.session_options();
  if (o.ctx < 0) fail(ErrorKind::kInvalidArgument, "--ctx must be positive");
  so.n_ctx = o.ctx;
  if (o.question_agnostic && o.question.empty()) {
    fail(ErrorKind::kInvalidArgument, "--question-agnostic needs --question (the context is -p or -f)");
  }

  Timer load_timer;
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads));
  const ModelInfo& hp = model.info();
  const Tokenizer& tokenizer = model.tokenizer();
  const int n_ctx = o.ctx > 0 ? o.ctx : hp.n_ctx_train;
  if (n_ctx > hp.n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "--ctx {} exceeds the model's training context of {}", n_ctx, hp.n_ctx_train);
  }

  // The prompt is the context, then the question (if given) after a blank line. With
  // --question-agnostic the two are tokenized apart, so the context can be compressed before the
  // question is seen.
  const std::string context = o.prompt_file.empty() ? o.prompt : read_text_file(o.prompt_file);
  const std::string user = o.question.empty() ? context : context + "\n\n" + o.question;
  std::string text = user;
  if (o.chat) {
    std::vector<ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", user});
    text = apply_chat_template(model.pick_chat_template(o.chat_template), messages, /*add_generation_prompt=*/true);
  }
  size_t split = text.size();  // where the question starts
  if (o.question_agnostic) split = text.rfind(o.question);
  std::vector<int32_t> ids = tokenizer.encode(text.substr(0, split), tokenizer.add_bos(), /*parse_special=*/o.chat);
  std::vector<int32_t> question_ids;
  if (split < text.size()) question_ids = tokenizer.encode(text.substr(split), false, o.chat);
  const size_t n_prompt = ids.size() + question_ids.size();
  if (static_cast<int>(n_prompt) + 1 > n_ctx) {
    fail(ErrorKind::kOutOfRange, "the prompt has {} tokens but --ctx is {} (the model allows up to {})",
         n_prompt, n_ctx, hp.n_ctx_train);
  }
  fmt::print(stderr, "model: {} ({}, {} layers, {} heads / {} KV heads), loaded in {:.2f} s, {} threads\n",
             hp.name, hp.arch, hp.n_layer, hp.n_head, hp.n_head_kv, load_timer.seconds(), o.threads);
  if (o.show_prompt) fmt::print("{}", text);

  Session session(model, so);
  fmt::print(stderr, "KV cache: {}, {}\n", kv_type_name(so.kv_type), so.press.describe());
  // Progress on long prompts only; short ones finish before a line would be useful.
  std::function<void(int, int)> progress;
  Timer prefill_timer;
  if (n_prompt >= 1024) {
    progress = [&](int done, int total) {
      const double s = prefill_timer.seconds();
      fmt::print(stderr, "\rprefill {} tokens: layer {}/{}, {:.1f} s, ETA {:.1f} s   ", n_prompt, done, total, s,
                 s / done * (total - done));
      if (done == total) fmt::print(stderr, "\n");
    };
  }
  const auto print_piece = [](int32_t, std::string_view piece) {
    fmt::print("{}", piece);
    std::fflush(stdout);
    return true;
  };
  GenerateStats st;
  if (o.question_agnostic) {
    session.prefill(ids, progress);  // the context alone, compressed
    const double context_s = prefill_timer.seconds();
    gp.compress_prompt = false;
    st = generate(session, question_ids, gp, print_piece);
    st.n_prompt = static_cast<int>(n_prompt);
    st.prefill_s += context_s;
  } else {
    ids.insert(ids.end(), question_ids.begin(), question_ids.end());
    st = generate(session, ids, gp, print_piece, progress);
  }
  fmt::print("\n");
  std::fflush(stdout);
  if (o.verbose) print_kept(session);
  const double full = static_cast<double>(session.kv_full_bytes());
  fmt::print(stderr,
             "stats: prompt {} tok | prefill {:.1f} tok/s ({:.2f} s) | decode {:.1f} tok/s ({} tok) | "
             "peak RSS {} | KV cache {} ({:.1f}x smaller than full {}) | weights {}\n",
             st.n_prompt, st.n_prompt / std::max(st.prefill_s, 1e-9), st.prefill_s,
             st.n_decoded / std::max(st.decode_s, 1e-9), st.n_generated, format_bytes(peak_rss_bytes()),
             format_bytes(session.kv_bytes()), full / std::max<double>(1, session.kv_bytes()),
             format_bytes(session.kv_full_bytes()), format_bytes(hp.weight_bytes));
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("-p,--prompt", o->prompt, "prompt text");
  app.add_option("-f,--file", o->prompt_file, "read the prompt from a file");
  app.add_flag("--chat", o->chat, "wrap the prompt in the model's chat template as a user turn");
  app.add_option("--system", o->system, "system message (with --chat)");
  app.add_option("--chat-template", o->chat_template,
                 "chatml | llama3 | mistral | gemma (default: detected from the model's template)");
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate at most")->capture_default_str();
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--ctx", o->ctx, "context size in tokens (default: the model's)");
  app.add_flag("--show-prompt", o->show_prompt, "print the prompt (after the chat template) first");
  app.add_flag("-v,--verbose", o->verbose, "print the KV entries kept per layer");
  app.add_option("--question", o->question, "a question appended to the prompt (which is then the context)");
  app.add_flag("--question-agnostic", o->question_agnostic,
               "compress the context before the question is prefilled (needs --question)");
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  add_sampling_flags(app, o->sampling);
  return [o] { return run(*o); };
}

}  // namespace snapkv::cli

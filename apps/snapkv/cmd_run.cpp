// snapkv run: tokenize a prompt (optionally through the model's chat template), prefill it,
// stream the answer, and end with one line of measurements.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_error.h"
#include "commands.h"
#include "context_prompt.h"
#include "kv_options.h"
#include "model_options.h"
#include "sampling_flags.h"
#include "spec_flags.h"
#include "text_file.h"
#include "snapkv/context.h"
#include "snapkv/memory.h"
#include "snapkv/session.h"
#include "snapkv/timer.h"

namespace snapkv::cli {
namespace {

struct RunOptions {
  std::string model = kDefaultModel;
  PromptFlags in;
  int n_predict = 128;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ctx = 0;
  bool show_prompt = false;
  bool verbose = false;
  std::string question;
  bool question_agnostic = false;
  std::string context_file;    // --context: a state saved by `snapkv compress`
  std::string questions_file;  // one question a line, all asked on --context
  bool jsonl = false;
  SamplingParams sampling;
  SpecFlags spec;
  KvOptions kv;
  ModelFlags model_flags;
};

// -v: entries kept per layer by the last compression, over all KV heads.
void print_kept(const Session& session, const ModelInfo& info) {
  const std::vector<LayerKept> kept = session.kept();
  for (size_t il = 0; il < kept.size(); ++il) {
    const LayerKept& k = kept[il];
    const int32_t window = il < info.layer_window.size() ? info.layer_window[il] : 0;
    fmt::print(stderr, "layer {:2}: kept {} / {} entries ({:.1f} %){}\n", il, k.kept, k.total,
               100.0 * static_cast<double>(k.kept) / static_cast<double>(std::max<int64_t>(1, k.total)),
               window > 0 ? fmt::format(", sliding window of {}: not pressed", window) : "");
  }
}

void print_stats(const GenerateStats& st, const Session& session, size_t weight_bytes, const std::string& extra) {
  const double full = static_cast<double>(session.kv_full_bytes());
  fmt::print(stderr,
             "stats: prompt {} tok | prefill {:.1f} tok/s ({:.2f} s) | decode {:.1f} tok/s ({} tok) | "
             "peak RSS {} | KV cache {} ({:.1f}x smaller than full {}) | weights {}{}\n",
             st.n_prompt, st.n_prompt / std::max(st.prefill_s, 1e-9), st.prefill_s,
             st.n_decoded / std::max(st.decode_s, 1e-9), st.n_generated, format_bytes(peak_rss_bytes()),
             format_bytes(session.kv_bytes()), full / std::max<double>(1, session.kv_bytes()),
             format_bytes(session.kv_full_bytes()), format_bytes(weight_bytes), extra);
}

std::vector<std::string> read_questions(const RunOptions& o) {
  if (o.questions_file.empty()) return {o.question};
  std::vector<std::string> qs;
  std::string text = read_text_file(o.questions_file);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) qs.push_back(line);
    at = end + 1;
  }
  if (qs.empty()) fail(ErrorKind::kInvalidArgument, "{}: no questions (one a line)", o.questions_file);
  return qs;
}

// --context: every question answered from the saved state, decoded together.
int run_on_context(const RunOptions& o, const Model& model, SessionOptions so, const GenerateParams& gp) {
  const std::vector<std::string> questions = read_questions(o);
  Timer load_timer;
  ContextInfo info;
  std::vector<Session> sessions =
      load_contexts(model, o.context_file, static_cast<int>(questions.size()), so, &info);
  const double load_s = load_timer.seconds();
  fmt::print(stderr, "context: {} ({} tokens, {}, {} on disk), loaded for {} question(s) in {:.3f} s\n",
             o.context_file, info.n_tokens, info.pressed ? "pressed: " + info.press : "whole cache",
             format_bytes(info.file_bytes), questions.size(), load_s);
  if (so.press.compresses()) fmt::print(stderr, "KV cache: pressed per question, {}\n", so.press.describe());
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Session*> ptrs;
  for (size_t i = 0; i < questions.size(); ++i) {
    prompts.push_back(question_tokens(model, questions[i], info.question_prefix, info.question_suffix, info.chat));
    if (info.n_tokens + prompts.back().size() + 1 > static_cast<size_t>(sessions[i].n_ctx())) {
      fail(ErrorKind::kOutOfRange, "question {} has {} tokens; with the context's {} they exceed --ctx {}", i + 1,
           prompts.back().size(), info.n_tokens, sessions[i].n_ctx());
    }
    ptrs.push_back(&sessions[i]);
  }
  const bool stream = questions.size() == 1 && !o.jsonl;
  std::vector<std::string> answers(questions.size());
  const std::vector<GenerateStats> st =
      generate_batch(ptrs, prompts, gp, [&](size_t b, int32_t, std::string_view piece) {
        answers[b] += piece;
        if (stream) {
          fmt::print("{}", piece);
          std::fflush(stdout);
        }
        return true;
      });
  for (size_t i = 0; i < questions.size(); ++i) {
    if (o.jsonl) {
      const nlohmann::json j = {{"question", questions[i]},       {"answer", answers[i]},
                                {"context_tokens", info.n_tokens}, {"question_tokens", st[i].n_prompt},
                                {"generated_tokens", st[i].n_generated}, {"prefill_s", st[i].prefill_s},
                                {"decode_s", st[i].decode_s},     {"kv_bytes", sessions[i].kv_bytes()}};
      fmt::print("{}\n", j.dump());
    } else if (stream) {
      fmt::print("\n");
    } else {
      fmt::print("Q: {}\nA: {}\n\n", questions[i], answers[i]);
    }
  }
  std::fflush(stdout);
  if (o.verbose) print_kept(sessions[0], model.info());
  double prefill_s = 0, decode_s = 0;
  GenerateStats total;
  for (const GenerateStats& s : st) {
    total.n_prompt += s.n_prompt;
    total.n_generated += s.n_generated;
    prefill_s += s.prefill_s;
    decode_s = std::max(decode_s, s.decode_s);
    total.n_decoded += s.n_decoded;
    total.n_passes += s.n_passes;
    total.n_drafted += s.n_drafted;
    total.n_accepted += s.n_accepted;
  }
  total.prefill_s = prefill_s;
  total.decode_s = decode_s;
  print_stats(total, sessions[0], model.info().weight_bytes,
              fmt::format(" | context load {:.3f} s, first token after {:.3f} s{}", load_s / questions.size(),
                          load_s / questions.size() + st[0].prefill_s, spec_stats(gp.speculation, total)));
  return 0;
}

int run(const RunOptions& o) {
  const bool on_context = !o.context_file.empty();
  std::string document;  // -p or -f
  if (on_context) {
    if (o.in.given()) {
      fail(ErrorKind::kInvalidArgument, "--context is the prompt: give no -p or -f with it");
    }
    if (o.question.empty() == o.questions_file.empty()) {
      fail(ErrorKind::kInvalidArgument, "--context needs exactly one of --question TEXT or --questions-file FILE");
    }
    if (o.in.chat || !o.in.system.empty() || !o.in.chat_template.empty() || o.question_agnostic) {
      fail(ErrorKind::kInvalidArgument,
           "--chat, --system, --chat-template and --question-agnostic are decided when the context is compressed");
    }
  } else {
    document = o.in.text();
    if (!o.questions_file.empty() || o.jsonl) {
      fail(ErrorKind::kInvalidArgument, "--questions-file and --jsonl go with --context");
    }
  }
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampling = o.sampling;
  gp.speculation = o.spec.params();
  if (const std::string err = gp.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (on_context && gp.speculation.mode == SpecMode::kDraft) {
    fail(ErrorKind::kUnsupported, "--context answers its questions as a batch, with --spec prompt-lookup, not a draft model");
  }
  SessionOptions so = o.kv.session_options();
  if (o.ctx < 0) fail(ErrorKind::kInvalidArgument, "--ctx must be positive");
  so.n_ctx = o.ctx;
  if (o.question_agnostic && o.question.empty()) {
    fail(ErrorKind::kInvalidArgument, "--question-agnostic needs --question (the context is -p or -f)");
  }

  Timer load_timer;
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads, o.ctx));
  const ModelInfo& hp = model.info();
  const int n_ctx = hp.n_ctx;
  const auto n_window = std::count_if(hp.layer_window.begin(), hp.layer_window.end(), [](int32_t w) { return w > 0; });
  const std::string windows =
      n_window > 0 ? fmt::format(" of which {} sliding-window (presses compress the other {})", n_window, hp.n_layer - n_window)
                   : "";
  const std::string rope =
      hp.longrope.empty() ? "" : fmt::format(", LongRoPE {} factors for a context of {}", hp.longrope, hp.n_ctx);
  fmt::print(stderr, "model: {} ({}, {} layers{}, {} heads / {} KV heads{}), loaded in {:.2f} s, {} threads\n",
             hp.name, hp.arch, hp.n_layer, windows, hp.n_head, hp.n_head_kv, rope, load_timer.seconds(), o.threads);
  if (on_context) return run_on_context(o, model, so, gp);

  // The prompt is the context, then the question (if given) after a blank line, tokenized apart
  // (as on a saved context), so that with --question-agnostic the context can be compressed
  // before the question is seen.
  std::vector<int32_t> ids, question_ids;
  std::string text;
  if (o.question.empty()) {
    text = document;
    if (o.in.chat) {
      std::vector<ChatMessage> messages;
      if (!o.in.system.empty()) messages.push_back({"system", o.in.system});
      messages.push_back({"user", document});
      text = apply_chat_template(model.pick_chat_template(o.in.chat_template), messages, /*add_generation_prompt=*/true);
    }
    ids = model.tokenizer().encode(text, model.tokenizer().add_bos(), /*parse_special=*/o.in.chat);
  } else {
    const ContextPrompt cp = o.in.context(model, document);
    ids = context_tokens(model, cp);
    question_ids = question_tokens(model, o.question, cp.question_prefix, cp.question_suffix, cp.chat);
    text = cp.context + cp.question_prefix + o.question + cp.question_suffix;
  }
  const size_t n_prompt = ids.size() + question_ids.size();
  if (static_cast<int>(n_prompt) + 1 > n_ctx) {
    fail(ErrorKind::kOutOfRange, "the prompt has {} tokens but --ctx is {} (the model allows up to {})",
         n_prompt, n_ctx, hp.n_ctx_train);
  }
  if (o.show_prompt) fmt::print("{}", text);

  Session session(model, so);
  fmt::print(stderr, "KV cache: {}, {}\n", kv_type_name(so.kv_type), so.press.describe());
  SessionOptions draft_so = so;
  draft_so.n_ctx = n_ctx;
  const DraftSession draft = load_draft(o.spec, o.model_flags.model_options(o.threads), draft_so);
  if (draft.model) fmt::print(stderr, "draft model: {} ({} layers)\n", draft.model->info().name, draft.model->info().n_layer);
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
    st = generate(session, question_ids, gp, print_piece, {}, draft.session.get());
    st.n_prompt = static_cast<int>(n_prompt);
    st.prefill_s += context_s;
  } else {
    ids.insert(ids.end(), question_ids.begin(), question_ids.end());
    st = generate(session, ids, gp, print_piece, progress, draft.session.get());
  }
  fmt::print("\n");
  std::fflush(stdout);
  if (o.verbose) print_kept(session, model.info());
  print_stats(st, session, hp.weight_bytes, spec_stats(gp.speculation, st));
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  add_prompt_flags(app, o->in);
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate at most")->capture_default_str();
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--ctx", o->ctx, "context size in tokens (default: the model's)");
  app.add_flag("--show-prompt", o->show_prompt, "print the prompt (after the chat template) first");
  app.add_flag("-v,--verbose", o->verbose, "print the KV entries kept per layer");
  app.add_option("--question", o->question, "a question appended to the prompt (which is then the context)");
  app.add_flag("--question-agnostic", o->question_agnostic,
               "compress the context before the question is prefilled (needs --question)");
  app.add_option("--context", o->context_file,
                 "answer on a context file made by `snapkv compress` instead of -p / -f (its press: used as it "
                 "is; whole: pressed per question with --kv-press)");
  app.add_option("--questions-file", o->questions_file,
                 "with --context: one question a line, each answered from the context, decoded as one batch");
  app.add_flag("--jsonl", o->jsonl, "with --context: one JSON line per answer on stdout");
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  add_sampling_flags(app, o->sampling);
  add_spec_flags(app, o->spec);
  return [o] { return run(*o); };
}

}  // namespace snapkv::cli

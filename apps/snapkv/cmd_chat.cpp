// snapkv chat: a multi-turn conversation on stdin. Each turn appends only its new text (the
// template's suffix) to the session, so earlier turns are not prefilled again; with a press,
// every turn's prefill is compressed together with what the cache already holds. --context starts
// from a context file (a document compressed with `snapkv compress --chat`, or a conversation
// saved with --save), whose first question closes the saved user turn or opens the next one.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cli_error.h"
#include "commands.h"
#include "context_prompt.h"
#include "kv_options.h"
#include "model_options.h"
#include "sampling_flags.h"
#include "spec_flags.h"
#include "snapkv/context.h"
#include "snapkv/memory.h"
#include "snapkv/session.h"

namespace snapkv::cli {
namespace {

struct ChatOptions {
  std::string model = kDefaultModel;
  std::string system;
  std::string chat_template;
  int n_predict = 256;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ctx = 0;
  std::string context_file, save_file;
  SamplingParams sampling;
  SpecFlags spec;
  KvOptions kv;
  ModelFlags model_flags;
};

int chat(const ChatOptions& o) {
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampling = o.sampling;
  gp.speculation = o.spec.params();
  if (const std::string err = gp.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  SessionOptions so = o.kv.session_options();
  if (o.ctx < 0) fail(ErrorKind::kInvalidArgument, "--ctx must be positive");
  so.n_ctx = o.ctx;
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads, o.ctx));
  const Tokenizer& tokenizer = model.tokenizer();
  const ChatTemplate tmpl = model.pick_chat_template(o.chat_template);
  const DraftSession draft = load_draft(o.spec, o.model_flags.model_options(o.threads), so);

  // On a context file, the saved tokens stand for the conversation so far; its first question
  // comes with the file's own text around it, and later turns render after a stand-in for it.
  ContextInfo context;
  Session session = o.context_file.empty() ? Session(model, so) : load_context(model, o.context_file, so, &context);
  if (!o.context_file.empty()) {
    if (!context.chat) fail(ErrorKind::kInvalidArgument, "{} was compressed without --chat", o.context_file);
    if (!o.system.empty()) fail(ErrorKind::kInvalidArgument, "--system is decided when the context is compressed");
  }
  fmt::print(stderr, "chat with {} | KV cache: {}, {} | one message per line, /exit or end of input to stop\n",
             model.info().name, kv_type_name(so.kv_type), so.press.describe());
  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  std::string fed;  // the rendered conversation the session holds
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "/exit") break;
    if (line.empty()) continue;
    std::vector<int32_t> ids;
    std::string text;
    if (!o.context_file.empty() && messages.empty()) {
      ids = question_tokens(model, line, context.question_prefix, context.question_suffix, true);
      messages.push_back({"user", "(saved context)\n\n" + line});
      text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
    } else {
      messages.push_back({"user", line});
      text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
      if (text.compare(0, fed.size(), fed) != 0) {  // the template rewrote earlier turns
        if (!o.context_file.empty()) {
          fail(ErrorKind::kUnsupported, "the chat template rewrites earlier turns, which a saved context cannot follow");
        }
        session.reset();
        fed.clear();
      }
      ids = tokenizer.encode(text.substr(fed.size()), fed.empty() && tokenizer.add_bos(), /*parse_special=*/true);
    }
    std::string reply;
    int32_t last = -1;
    const GenerateStats st = generate(session, ids, gp, [&](int32_t id, std::string_view piece) {
      fmt::print("{}", piece);
      std::fflush(stdout);
      reply += piece;
      if (id >= 0) last = id;
      return true;
    }, {}, draft.session.get());
    // The session must hold the whole reply: the last sampled token has not been run yet.
    if (st.n_generated > st.n_decoded && last >= 0 && session.n_past() < session.n_ctx()) session.decode(last);
    fmt::print("\n");
    std::fflush(stdout);
    messages.push_back({"assistant", reply});
    fed = text + reply;
    fmt::print(stderr, "turn {}: +{} prompt tok, prefill {:.1f} tok/s, decode {:.1f} tok/s | context {} tok | KV cache {} (full {}){}\n",
               (messages.size() + 1) / 2, st.n_prompt, st.n_prompt / std::max(st.prefill_s, 1e-9),
               st.n_decoded / std::max(st.decode_s, 1e-9), session.n_past(), format_bytes(session.kv_bytes()),
               format_bytes(session.kv_full_bytes()), spec_stats(gp.speculation, st));
  }
  if (!o.save_file.empty()) {
    if (session.n_past() == 0) fail(ErrorKind::kInvalidArgument, "--save: the conversation is empty, nothing to save");
    // Before the first turn on a context, its next question is still the file's.
    const ContextPrompt next = !o.context_file.empty() && messages.empty()
                                   ? ContextPrompt{"", context.question_prefix, context.question_suffix, true}
                                   : next_user_turn(tmpl, messages, fed);
    ContextInfo notes;
    notes.question_prefix = next.question_prefix;
    notes.question_suffix = next.question_suffix;
    notes.chat = true;
    const size_t bytes = save_context(session, o.save_file, notes);
    fmt::print(stderr, "saved {}: {} tokens, {} on disk\n", o.save_file, session.n_past(), format_bytes(bytes));
  }
  return 0;
}

}  // namespace

Action add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("--system", o->system, "system message");
  app.add_option("--chat-template", o->chat_template, "chatml | llama3 | mistral | gemma (default: from the model)");
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate at most per turn")->capture_default_str();
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--ctx", o->ctx, "context size in tokens (default: the model's)");
  app.add_option("--context", o->context_file,
                 "start from a context file (`snapkv compress --chat`, or a conversation saved with --save)");
  app.add_option("--save", o->save_file, "save the conversation's state to this context file at the end");
  add_sampling_flags(app, o->sampling);
  add_spec_flags(app, o->spec);
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  return [o] { return chat(*o); };
}

}  // namespace snapkv::cli

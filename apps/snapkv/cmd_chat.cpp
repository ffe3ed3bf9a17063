// snapkv chat: a multi-turn conversation on stdin. Each turn appends only its new text (the
// template's suffix) to the session, so earlier turns are not prefilled again; with a press,
// every turn's prefill is compressed together with what the cache already holds.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "commands.h"
#include "snapkv/chat.h"
#include "engine/generate.h"
#include "engine/sequence.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "kv_options.h"
#include "model_options.h"
#include "model/model.h"
#include "util/error.h"
#include "util/memory.h"
#include "util/thread_pool.h"

namespace snapkv::cli {
namespace {

struct ChatOptions {
  std::string model = kDefaultModel;
  std::string system;
  std::string chat_template;
  int n_predict = 256;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ctx = 0;
  SamplingParams sampling;
  KvOptions kv;
  ModelFlags model_flags;
};

int chat(const ChatOptions& o) {
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampling = o.sampling;
  if (const std::string err = gp.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const SequenceOptions so = o.kv.session_options();
  const auto file = GgufFile::open(o.model, o.model_flags.file_memory());
  const auto model = load_decoder(*file, o.model_flags.model_options());
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const int n_ctx = o.ctx > 0 ? o.ctx : model->hparams().n_ctx_train;
  if (n_ctx > model->hparams().n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "--ctx {} exceeds the model's training context of {}", n_ctx, model->hparams().n_ctx_train);
  }
  ChatTemplate tmpl = chat_template_from_jinja(file->get_string("tokenizer.chat_template", ""));
  if (!o.chat_template.empty()) tmpl = ChatTemplate{chat_template_from_name(o.chat_template), std::nullopt};

  ThreadPool pool(o.threads);
  Sequence session(*model, n_ctx, pool, so);
  fmt::print(stderr, "chat with {} | KV cache: {}, {} | one message per line, /exit or end of input to stop\n",
             model->hparams().name, kv_type_name(so.kv_type), so.press.describe());
  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  std::string fed;  // the rendered conversation the session holds
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const std::string text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
    if (text.compare(0, fed.size(), fed) != 0) {  // the template rewrote earlier turns
      session.reset();
      fed.clear();
    }
    const std::vector<int32_t> ids =
        tokenizer->encode(text.substr(fed.size()), fed.empty() && tokenizer->add_bos(), /*parse_special=*/true);
    std::string reply;
    int32_t last = -1;
    const GenerateStats st = generate(session, *tokenizer, ids, gp, [&](int32_t id, std::string_view piece) {
      fmt::print("{}", piece);
      std::fflush(stdout);
      reply += piece;
      if (id >= 0) last = id;
      return true;
    });
    // The session must hold the whole reply: the last sampled token has not been run yet.
    if (st.n_generated > st.n_decoded && last >= 0 && session.n_past() < session.n_ctx()) session.decode(last);
    fmt::print("\n");
    std::fflush(stdout);
    messages.push_back({"assistant", reply});
    fed = text + reply;
    fmt::print(stderr, "turn {}: +{} prompt tok, prefill {:.1f} tok/s, decode {:.1f} tok/s | context {} tok | KV cache {} (full {})\n",
               (messages.size() + 1) / 2, st.n_prompt, st.n_prompt / std::max(st.prefill_s, 1e-9),
               st.n_decoded / std::max(st.decode_s, 1e-9), session.n_past(), format_bytes(session.kv().bytes()),
               format_bytes(session.kv_full_bytes()));
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
  app.add_option("--temp", o->sampling.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--seed", o->sampling.seed, "sampling seed")->capture_default_str();
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  return [o] { return chat(*o); };
}

}  // namespace snapkv::cli

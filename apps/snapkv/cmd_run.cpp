// snapkv run: tokenize a prompt (optionally through the model's chat template), prefill it,
// stream the answer, and end with one line of measurements.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "commands.h"
#include "engine/chat_template.h"
#include "engine/generate.h"
#include "engine/session.h"
#include "io/gguf.h"
#include "io/tokenizer.h"
#include "model/model.h"
#include "util/error.h"
#include "util/memory.h"
#include "util/thread_pool.h"
#include "util/timer.h"

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
  SamplingParams sampling;
};

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kBadFile, "{}: cannot read prompt file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const RunOptions& o) {
  if (o.prompt.empty() == o.prompt_file.empty()) {
    fail(ErrorKind::kInvalidArgument, "give exactly one of -p TEXT or -f FILE");
  }
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  if (o.ctx < 0) fail(ErrorKind::kInvalidArgument, "--ctx must be positive");
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampling = o.sampling;
  if (const std::string err = gp.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);

  Timer load_timer;
  const auto file = GgufFile::open(o.model);
  const auto model = load_model(*file);
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const ModelHparams& hp = model->hparams();
  const int n_ctx = o.ctx > 0 ? o.ctx : hp.n_ctx_train;
  if (n_ctx > hp.n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "--ctx {} exceeds the model's training context of {}", n_ctx, hp.n_ctx_train);
  }

  std::string text = o.prompt_file.empty() ? o.prompt : read_text_file(o.prompt_file);
  std::vector<int32_t> ids;
  if (o.chat) {
    std::vector<ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", text});
    ChatTemplate tmpl = chat_template_from_jinja(file->get_string("tokenizer.chat_template", ""));
    if (!o.chat_template.empty()) tmpl = ChatTemplate{chat_template_from_name(o.chat_template), std::nullopt};
    text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
    ids = tokenizer->encode(text, tokenizer->add_bos(), /*parse_special=*/true);
  } else {
    ids = tokenizer->encode(text, tokenizer->add_bos(), /*parse_special=*/false);
  }
  if (static_cast<int>(ids.size()) + 1 > n_ctx) {
    fail(ErrorKind::kOutOfRange, "the prompt has {} tokens but --ctx is {} (the model allows up to {})",
         ids.size(), n_ctx, hp.n_ctx_train);
  }
  fmt::print(stderr, "model: {} ({}, {} layers, {} heads / {} KV heads), loaded in {:.2f} s, {} threads\n",
             hp.name, hp.arch, hp.n_layer, hp.n_head, hp.n_head_kv, load_timer.seconds(), o.threads);
  if (o.show_prompt) fmt::print("{}", text);

  ThreadPool pool(o.threads);
  Session session(*model, n_ctx, pool);
  // Progress on long prompts only; short ones finish before a line would be useful.
  std::function<void(int, int)> progress;
  Timer prefill_timer;
  if (ids.size() >= 1024) {
    progress = [&](int done, int total) {
      const double s = prefill_timer.seconds();
      fmt::print(stderr, "\rprefill {} tokens: layer {}/{}, {:.1f} s, ETA {:.1f} s   ", ids.size(), done, total, s,
                 s / done * (total - done));
      if (done == total) fmt::print(stderr, "\n");
    };
  }
  const GenerateStats st = generate(session, *tokenizer, ids, gp, [](int32_t, std::string_view piece) {
    fmt::print("{}", piece);
    std::fflush(stdout);
    return true;
  }, progress);
  fmt::print("\n");
  fmt::print(stderr,
             "stats: prompt {} tok | prefill {:.1f} tok/s ({:.2f} s) | decode {:.1f} tok/s ({} tok) | "
             "peak RSS {} | KV cache {} | weights {}\n",
             st.n_prompt, st.n_prompt / std::max(st.prefill_s, 1e-9), st.prefill_s,
             st.n_decoded / std::max(st.decode_s, 1e-9), st.n_generated, format_bytes(peak_rss_bytes()),
             format_bytes(session.kv().bytes()), format_bytes(model->weight_bytes()));
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
  app.add_option("--temp", o->sampling.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", o->sampling.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", o->sampling.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", o->sampling.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", o->sampling.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", o->sampling.repeat_last_n, "tokens the penalty looks back")->capture_default_str();
  app.add_option("--seed", o->sampling.seed, "sampling seed")->capture_default_str();
  return [o] { return run(*o); };
}

}  // namespace snapkv::cli

// snapkv serve: the OpenAI-compatible HTTP server. SIGINT/SIGTERM stop it gracefully: requests
// arriving meanwhile get 503, queued ones end, running ones may finish until a second before
// --shutdown-timeout and then end with the text they have (finish_reason "shutdown"); the process
// exits with status 0 once the last reply is written, at the latest at --shutdown-timeout. A
// second signal exits at once (status 1).
#include <fmt/core.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli_error.h"
#include "commands.h"
#include "kv_options.h"
#include "model_options.h"
#include "sampling_flags.h"
#include "spec_flags.h"
#include "text_file.h"
#include "server/http_server.h"
#include "snapkv/memory.h"
#include "snapkv/scheduler.h"
#include "snapkv/session.h"

namespace snapkv::cli {
namespace {

struct ServeOptions {
  std::string model = kDefaultModel;
  std::string model_id;
  std::string kv_memory = "2GiB";
  std::string context_store_size = "20GiB";
  bool no_prompt_cache = false;
  std::string max_body = "4MiB";
  std::string chat_template;
  std::string api_key_file;
  std::string cors_origins;
  SamplingParams sampling;  // the flags; the model's recommended sampling fills the rest
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SchedulerOptions sched;
  server::ServerOptions http;
  KvOptions kv;
  ModelFlags model_flags;
  SpecFlags spec;
};

int serve(ServeOptions& o, const CLI::App* app) {
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  if (o.http.port < 0 || o.http.port > 65535) fail(ErrorKind::kInvalidArgument, "--port must be between 0 and 65535");
  o.sched.kv_memory = parse_bytes(o.kv_memory);
  o.sched.context_store_bytes = parse_bytes(o.context_store_size);
  o.sched.prompt_cache = !o.no_prompt_cache;
  const SessionOptions so = o.kv.session_options();
  o.sched.kv_type = so.kv_type;
  o.http.defaults.press = so.press;
  o.http.defaults.speculation = o.spec.params();
  if (const std::string err = o.sched.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (o.http.defaults.max_tokens < 0) fail(ErrorKind::kInvalidArgument, "--max-tokens must be >= 0");
  if (!(o.http.defaults.timeout_s > 0)) fail(ErrorKind::kInvalidArgument, "--timeout must be positive");
  if (!(o.http.shutdown_timeout_s >= 0)) fail(ErrorKind::kInvalidArgument, "--shutdown-timeout must be >= 0");
  if (!(o.http.limits.header_timeout_s > 0 && o.http.limits.body_timeout_s > 0)) {
    fail(ErrorKind::kInvalidArgument, "--header-timeout and --body-timeout must be positive");
  }
  if (o.http.max_connections < 1) fail(ErrorKind::kInvalidArgument, "--max-connections must be >= 1");
  o.http.limits.max_body = parse_bytes(o.max_body);
  if (!o.api_key_file.empty()) {
    if (!o.http.access.api_key.empty()) fail(ErrorKind::kInvalidArgument, "give --api-key or --api-key-file, not both");
    o.http.access.api_key = read_text_file(o.api_key_file);
    while (!o.http.access.api_key.empty() && std::isspace(static_cast<unsigned char>(o.http.access.api_key.back()))) o.http.access.api_key.pop_back();
    if (o.http.access.api_key.empty()) fail(ErrorKind::kInvalidArgument, "--api-key-file {} is empty", o.api_key_file);
  }
  for (size_t at = 0; at < o.cors_origins.size();) {
    const size_t end = std::min(o.cors_origins.find(',', at), o.cors_origins.size());
    if (end > at) o.http.access.cors_origins.push_back(o.cors_origins.substr(at, end - at));
    at = end + 1;
  }
  o.http.access.loopback_only_hosts = server::is_loopback_host(o.http.host);

  // Signals go to one waiting thread only, so that no other thread is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads, o.sched.n_ctx));
  const ModelInfo& hp = model.info();
  const ChatTemplate tmpl = model.pick_chat_template(o.chat_template);
  if (o.model_id.empty()) o.model_id = std::filesystem::path(o.model).stem().string();
  o.http.defaults.model_id = o.model_id;
  o.http.defaults.sampling = given_sampling_flags(*app, o.sampling, hp.recommended_sampling);
  if (const std::string err = o.http.defaults.sampling.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);

  // A draft model for requests that speculate with one (--draft-model: the default for those that
  // do not say), loaded as `run` loads it: its own context, which caps its sessions'.
  std::optional<Model> draft;
  if (!o.spec.draft_model.empty()) draft.emplace(Model::load(o.spec.draft_model, o.model_flags.model_options(o.threads)));
  o.http.defaults.draft_model = draft.has_value();
  Scheduler scheduler(model, o.sched, draft ? &*draft : nullptr);
  server::HttpServer http(scheduler, model.tokenizer(), tmpl, o.http, o.sched.kv_memory, o.sched.max_batch);
  const int port = http.bind();
  const SamplingParams& sp = o.http.defaults.sampling;
  fmt::print(stderr, "model: {} ({} layers), context {}, {} threads; KV budget {}, batch {}, queue {}; {}\n", o.model_id,
             hp.n_layer, scheduler.n_ctx(), o.threads, format_bytes(static_cast<double>(o.sched.kv_memory)),
             o.sched.max_batch, o.sched.max_queue, so.press.describe());
  fmt::print(stderr, "default sampling ({}): temperature {}, top-k {}, top-p {}, min-p {}, repeat penalty {}; {}\n",
             hp.sampling_from_file ? "the model's general.sampling.* and flags" : "llama.cpp's server defaults and flags",
             sp.temperature, sp.top_k, sp.top_p, sp.min_p, sp.repeat_penalty,
             o.http.access.api_key.empty() ? "no API key" : "API key required");
  fmt::print(stderr, "prompt cache: {}; context store: {}; draft model: {}\n", o.sched.prompt_cache ? "on" : "off",
             o.sched.context_store.empty() ? "none" : o.sched.context_store,
             draft ? fmt::format("{} ({} layers)", draft->info().name, draft->info().n_layer) : "none");
  fmt::print("listening on http://{}:{}\n", o.http.host, port);
  std::fflush(stdout);

  std::atomic<bool> served{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (served) return;
    fmt::print(stderr, "{}: stopping (a second signal exits at once)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    http.shutdown();  // new requests get 503; running ones get until --shutdown-timeout
    sigwait(&signals, &sig);
    if (served) return;
    fmt::print(stderr, "second signal: exiting now\n");
    std::_Exit(1);
  });
  http.serve();
  served = true;
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter, which then returns
  waiter.join();
  fmt::print(stderr, "stopped\n");
  return 0;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("--model-id", o->model_id, "the model name clients use (default: the file name without .gguf)");
  app.add_flag("--strict-model", o->http.defaults.strict_model,
               "a request naming another model than --model-id gets 404 (default: any name is served)");
  app.add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->http.port, "port (0: any free port, printed at start)")->capture_default_str();
  app.add_option("--kv-memory", o->kv_memory, "KV cache budget for all running requests (e.g. 2GiB)")->capture_default_str();
  app.add_option("--max-batch", o->sched.max_batch, "requests running at once")->capture_default_str();
  app.add_flag("--no-prompt-cache", o->no_prompt_cache,
               "forget finished requests at once instead of keeping their states for requests that start alike");
  app.add_option("--context-store", o->sched.context_store,
                 "also save states to a directory or redis://HOST:PORT, shared by servers and kept across restarts");
  app.add_option("--context-store-size", o->context_store_size, "most bytes a --context-store directory keeps")
      ->capture_default_str();
  app.add_option("--max-queue", o->sched.max_queue, "requests waiting beyond them (then 429)")->capture_default_str();
  app.add_option("--ctx", o->sched.n_ctx, "context per request (default: the model's)");
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--max-tokens", o->http.defaults.max_tokens, "max_tokens when a request gives none")->capture_default_str();
  app.add_option("--timeout", o->http.defaults.timeout_s, "seconds a request may take when it gives no timeout")->capture_default_str();
  app.add_option("--max-body", o->max_body, "largest request body (then 413)")->capture_default_str();
  app.add_option("--chat-template", o->chat_template, "chatml | llama3 | mistral | gemma (default: from the model)");
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  app.add_option("--shutdown-timeout", o->http.shutdown_timeout_s,
                 "seconds a stop waits for replies to be written before exiting")->capture_default_str();
  app.add_option("--header-timeout", o->http.limits.header_timeout_s,
                 "seconds a request's line and headers may take to arrive (then 408)")->capture_default_str();
  app.add_option("--body-timeout", o->http.limits.body_timeout_s,
                 "seconds a request's body may take to arrive (then 408)")->capture_default_str();
  app.add_option("--max-connections", o->http.max_connections, "connections open at once (then 503)")->capture_default_str();
  app.add_option("--api-key", o->http.access.api_key,
                 "require 'Authorization: Bearer KEY' on every route but /health")->envname("SNAPKV_API_KEY");
  app.add_option("--api-key-file", o->api_key_file, "read the API key from a file (first line)");
  app.add_option("--cors-origins", o->cors_origins,
                 "web origins allowed to call the server from a browser, comma-separated (* for any)");
  add_sampling_flags(app, o->sampling, /*with_seed=*/false);
  add_spec_flags(app, o->spec);
  return [o, &app] { return serve(*o, &app); };
}

}  // namespace snapkv::cli

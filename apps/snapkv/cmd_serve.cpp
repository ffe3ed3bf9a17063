// snapkv serve: the OpenAI-compatible HTTP server. SIGINT/SIGTERM stop it gracefully: no new
// requests are accepted, in-flight ones end with the text they have, and the exit status is 0.
#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli_error.h"
#include "commands.h"
#include "kv_options.h"
#include "model_options.h"
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
  std::string max_body = "4MiB";
  std::string chat_template;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SchedulerOptions sched;
  server::ServerOptions http;
  KvOptions kv;
  ModelFlags model_flags;
};

int serve(ServeOptions& o) {
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  if (o.http.port < 0 || o.http.port > 65535) fail(ErrorKind::kInvalidArgument, "--port must be between 0 and 65535");
  o.sched.kv_memory = parse_bytes(o.kv_memory);
  o.http.max_body = parse_bytes(o.max_body);
  const SessionOptions so = o.kv.session_options();
  o.sched.kv_type = so.kv_type;
  o.http.defaults.press = so.press;
  if (const std::string err = o.sched.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (o.http.defaults.max_tokens < 0) fail(ErrorKind::kInvalidArgument, "--max-tokens must be >= 0");
  if (!(o.http.defaults.timeout_s > 0)) fail(ErrorKind::kInvalidArgument, "--timeout must be positive");

  // Signals go to one waiting thread only, so that no other thread is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads));
  const ModelInfo& hp = model.info();
  if (o.sched.n_ctx > hp.n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "--ctx {} exceeds the model's training context of {}", o.sched.n_ctx, hp.n_ctx_train);
  }
  const ChatTemplate tmpl = model.pick_chat_template(o.chat_template);
  if (o.model_id.empty()) o.model_id = std::filesystem::path(o.model).stem().string();
  o.http.defaults.model_id = o.model_id;

  Scheduler scheduler(model, o.sched);
  server::HttpServer http(scheduler, model.tokenizer(), tmpl, o.http, o.sched.kv_memory, o.sched.max_batch, o.sched.max_queue);
  const int port = http.bind();
  fmt::print(stderr, "model: {} ({} layers), context {}, {} threads; KV budget {}, batch {}, queue {}; {}\n", o.model_id,
             hp.n_layer, scheduler.n_ctx(), o.threads, format_bytes(static_cast<double>(o.sched.kv_memory)),
             o.sched.max_batch, o.sched.max_queue, so.press.describe());
  fmt::print("listening on http://{}:{}\n", o.http.host, port);
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    fmt::print(stderr, "{}: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    scheduler.stop();  // running requests end now with the text they have
    http.stop();
  });
  http.serve();
  // serve() also returns when listening fails; wake the waiter so that it exits.
  if (waiter.joinable()) {
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
  }
  fmt::print(stderr, "stopped\n");
  return 0;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  app.add_option("--model-id", o->model_id, "the model name clients use (default: the file name without .gguf)");
  app.add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->http.port, "port (0: any free port, printed at start)")->capture_default_str();
  app.add_option("--kv-memory", o->kv_memory, "KV cache budget for all running requests (e.g. 2GiB)")->capture_default_str();
  app.add_option("--max-batch", o->sched.max_batch, "requests running at once")->capture_default_str();
  app.add_option("--max-queue", o->sched.max_queue, "requests waiting beyond them (then 429)")->capture_default_str();
  app.add_option("--ctx", o->sched.n_ctx, "context per request (default: the model's)");
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--max-tokens", o->http.defaults.max_tokens, "max_tokens when a request gives none")->capture_default_str();
  app.add_option("--timeout", o->http.defaults.timeout_s, "seconds a request may take when it gives no timeout")->capture_default_str();
  app.add_option("--max-body", o->max_body, "largest request body (then 413)")->capture_default_str();
  app.add_option("--chat-template", o->chat_template, "chatml | llama3 | mistral | gemma (default: from the model)");
  add_kv_options(app, o->kv);
  add_model_flags(app, o->model_flags);
  return [o] { return serve(*o); };
}

}  // namespace snapkv::cli

#pragma once
// The OpenAI-compatible HTTP server over a Scheduler:
//   POST /v1/chat/completions, /v1/completions  (stream: SSE chunks, then "data: [DONE]")
//   GET  /v1/models, /health, /metrics (Prometheus text)
// Client mistakes get a 4xx with OpenAI's error JSON; a full queue 429 and shutdown 503, both
// with Retry-After. A client that goes away is noticed at the next write (text, or a keep-alive
// sent while nothing else is written: an SSE comment when streaming, a space before the JSON
// otherwise) and its sequence is cancelled.
#include <memory>
#include <string>

#include "snapkv/chat.h"
#include "snapkv/scheduler.h"
#include "snapkv/tokenizer.h"
#include "server/api_request.h"
#include "server/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace snapkv::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0: any free port
  size_t max_body = size_t{4} << 20;     // bytes; larger bodies get 413
  double keep_alive_s = 0.5;             // idle time before a keep-alive write
  RequestDefaults defaults;
};

class HttpServer {
 public:
  HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ChatTemplate tmpl, const ServerOptions& options,
             size_t kv_budget, int max_batch, int max_queue);
  ~HttpServer();

  // Binds the address; returns the port (the chosen one for port 0). Error(kInvalidArgument) when
  // the address cannot be bound.
  int bind();
  // Serves until stop(); returns when every connection handler is done.
  void serve();
  void stop();

 private:
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);
  void reply_error(httplib::Response& res, const std::string& endpoint, const ApiError& e, int retry_after_s = 0);

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  ChatTemplate tmpl_;
  ServerOptions opt_;
  size_t kv_budget_;
  int max_batch_;
  ServerMetrics metrics_;
  std::unique_ptr<httplib::Server> svr_;
};

}  // namespace snapkv::server

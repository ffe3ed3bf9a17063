#pragma once
// The OpenAI-compatible HTTP server over a Scheduler:
//   POST /v1/chat/completions, /v1/completions  (stream: SSE chunks, then "data: [DONE]")
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
// Asynchronous I/O (Boost.Asio) on a few threads: a connection costs no thread, so slow or idle
// clients cannot starve the others (connection.h has the limits and deadlines). Client mistakes
// get a 4xx with OpenAI's error JSON; a full queue 429 and shutdown 503, both with Retry-After.
// Access: an optional API key on every route but /health, browser origins only when listed,
// and on a loopback address only loopback Host names (access.h).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <memory>
#include <string>

#include "server/access.h"
#include "server/api_request.h"
#include "server/connection.h"
#include "server/metrics.h"
#include "snapkv/chat.h"
#include "snapkv/scheduler.h"
#include "snapkv/tokenizer.h"

namespace snapkv::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port
  ConnectionLimits limits;          // body and header limits, read and write deadlines
  int max_connections = 1024;       // open at once; beyond, 503 and close
  double keep_alive_s = 0.5;        // idle time before a keep-alive write
  double shutdown_timeout_s = 10;   // after shutdown(), the most serve() runs (see shutdown())
  AccessOptions access;
  RequestDefaults defaults;
};

class HttpServer : private ConnectionOwner {
 public:
  HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ChatTemplate tmpl, const ServerOptions& options,
             size_t kv_budget, int max_batch);
  ~HttpServer() override;

  // Binds the address; returns the port (the chosen one for port 0). Error(kInvalidArgument) when
  // the address cannot be bound.
  int bind();
  // Serves until shutdown() has drained (or timed out).
  void serve();
  // From any thread: new requests get 503 from now on (the listening socket stays open) and
  // queued ones end with 503 or, when streamed, finish_reason "shutdown"; running requests go on
  // until 1 s before shutdown_timeout_s, then end with the text they have ("shutdown"). serve()
  // returns once every reply is written, or at shutdown_timeout_s whatever the clients do.
  void shutdown();

 private:
  struct Route;
  void accept();
  void handle(const std::shared_ptr<Connection>& c, HttpRequest& req) override;
  Reply error_reply(int status, const std::string& code, const std::string& message) override;
  void request_done() override;
  Reply api_error(const std::string& endpoint, const ApiError& e, int retry_after_s = 0);
  void completion(const std::shared_ptr<Connection>& c, const HttpRequest& req, bool chat);
  nlohmann::json model_object(const std::string& id) const;
  void stop_if_drained();

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  ChatTemplate tmpl_;
  ServerOptions opt_;
  Access access_;
  size_t kv_budget_;
  int max_batch_;
  ServerMetrics metrics_;
  std::atomic<int> busy_{0};  // requests handed to handle() and not yet answered
  std::atomic<bool> draining_{false};
  std::shared_ptr<std::atomic<int>> open_ = std::make_shared<std::atomic<int>>(0);
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_accept_, end_running_timer_, shutdown_timer_;
};

}  // namespace snapkv::server

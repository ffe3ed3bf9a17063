#include "server/http_server.h"

#include <fmt/format.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <ctime>
#include <thread>

#include "server/api_response.h"
#include "server/completion_stream.h"
#include "server/json_body.h"
#include "snapkv/error.h"

namespace snapkv::server {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

std::atomic<uint64_t> g_next_id{1};
constexpr int kIoThreads = 4;

const char* status_type(int status) {
  switch (status) {
    case 401: return "invalid_request_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "server_busy";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

// A path, the one method it takes and whether it needs the API key.
struct HttpServer::Route {
  const char* path;
  bool prefix;  // path ends with '/' and matches anything under it
  http::verb method;
  bool open;  // no API key needed
  std::function<void(HttpServer&, const std::shared_ptr<Connection>&, const HttpRequest&, const std::string& path)> run;
};

namespace {

std::string_view method_name(http::verb v) { return http::to_string(v); }

Reply make_reply(int status, std::string body, std::string content_type = "application/json") {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = std::move(content_type);
  return r;
}

}  // namespace

HttpServer::HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ChatTemplate tmpl, const ServerOptions& options,
                       size_t kv_budget, int max_batch)
    : scheduler_(scheduler), tokenizer_(tokenizer), tmpl_(std::move(tmpl)), opt_(options), access_(options.access),
      kv_budget_(kv_budget), max_batch_(max_batch), acceptor_(ioc_), retry_accept_(ioc_), end_running_timer_(ioc_),
      shutdown_timer_(ioc_) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  boost::system::error_code ec;
  const auto cannot = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidArgument, fmt::format("cannot listen on {}:{} ({})", opt_.host, opt_.port, why));
  };
  // An address, or a name such as localhost (its first address).
  net::ip::tcp::resolver resolver(ioc_);
  const auto found = resolver.resolve(opt_.host, std::to_string(opt_.port),
                                      net::ip::tcp::resolver::passive | net::ip::tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) throw cannot(ec ? ec.message() : "no address");
  const net::ip::tcp::endpoint endpoint = found.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw cannot(ec.message());
  return acceptor_.local_endpoint().port();
}

void HttpServer::serve() {
  accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < kIoThreads; ++i) threads.emplace_back([this] { ioc_.run(); });
  ioc_.run();
  for (std::thread& t : threads) t.join();
}

void HttpServer::accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](boost::system::error_code ec, net::ip::tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {  // out of file descriptors, say: try again shortly rather than spin
      retry_accept_.expires_after(std::chrono::milliseconds(50));
      retry_accept_.async_wait([this](boost::system::error_code wec) {
        if (!wec) accept();
      });
      return;
    }
    const auto c = std::make_shared<Connection>(std::move(socket), opt_.limits, static_cast<ConnectionOwner&>(*this), open_);
    if (*open_ > opt_.max_connections) {
      Reply r = error_reply(503, "too_many_connections",
                            fmt::format("the server has {} connections open, its limit; retry later", opt_.max_connections));
      r.headers.emplace_back("Retry-After", "1");
      c->refuse(std::move(r));
    } else {
      c->start();
    }
    accept();
  });
}

void HttpServer::shutdown() {
  if (draining_.exchange(true)) return;
  scheduler_.drain();
  const auto after = [](double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(std::max(s, 0.0)));
  };
  net::post(ioc_, [this, after] {
    // Running requests may finish until a second before the deadline; then they end ("shutdown").
    end_running_timer_.expires_after(after(opt_.shutdown_timeout_s - 1));
    end_running_timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) scheduler_.stop();
    });
    shutdown_timer_.expires_after(after(opt_.shutdown_timeout_s));
    shutdown_timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) ioc_.stop();  // clients that do not read their replies are not waited for
    });
    stop_if_drained();
  });
}

void HttpServer::request_done() {
  --busy_;
  if (draining_) net::post(ioc_, [this] { stop_if_drained(); });
}

void HttpServer::stop_if_drained() {
  if (busy_ > 0) return;
  boost::system::error_code ec;
  acceptor_.close(ec);
  ioc_.stop();
}

Reply HttpServer::error_reply(int status, const std::string& code, const std::string& message) {
  metrics_.count_request("other", status);
  return make_reply(status, dump_json(error_body(ApiError(status, status_type(status), "", code, message))));
}

Reply HttpServer::api_error(const std::string& endpoint, const ApiError& e, int retry_after_s) {
  metrics_.count_request(endpoint, e.status);
  Reply r = make_reply(e.status, dump_json(error_body(e)));
  if (retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

json HttpServer::model_object(const std::string& id) const {
  return json{{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "snapkv"}, {"context_length", scheduler_.n_ctx()}};
}

void HttpServer::handle(const std::shared_ptr<Connection>& c, HttpRequest& req) {
  ++busy_;
  static const std::vector<Route> routes = {
      {"/health", false, http::verb::get, true,
       [](HttpServer& s, auto& conn, auto&, auto&) {
         s.metrics_.count_request("/health", 200);
         conn->reply(make_reply(200, R"({"status":"ok"})"));
       }},
      {"/metrics", false, http::verb::get, false,
       [](HttpServer& s, auto& conn, auto&, auto&) {
         s.metrics_.count_request("/metrics", 200);
         conn->reply(make_reply(200, s.metrics_.prometheus(s.scheduler_.metrics(), s.kv_budget_, s.max_batch_),
                                "text/plain; version=0.0.4"));
       }},
      {"/v1/models", false, http::verb::get, false,
       [](HttpServer& s, auto& conn, auto&, auto&) {
         s.metrics_.count_request("/v1/models", 200);
         conn->reply(make_reply(200, dump_json(json{{"object", "list"},
                                                    {"data", json::array({s.model_object(s.opt_.defaults.model_id)})}})));
       }},
      {"/v1/models/", true, http::verb::get, false,
       [](HttpServer& s, auto& conn, auto&, const std::string& path) {
         const std::string id = path.substr(std::string_view("/v1/models/").size());
         if (id != s.opt_.defaults.model_id) {
           return conn->reply(s.api_error("/v1/models", model_not_found(id, s.opt_.defaults.model_id)));
         }
         s.metrics_.count_request("/v1/models", 200);
         conn->reply(make_reply(200, dump_json(s.model_object(id))));
       }},
      {"/v1/chat/completions", false, http::verb::post, false,
       [](HttpServer& s, auto& conn, auto& r, auto&) { s.completion(conn, r, true); }},
      {"/v1/completions", false, http::verb::post, false,
       [](HttpServer& s, auto& conn, auto& r, auto&) { s.completion(conn, r, false); }},
  };

  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  const std::string origin(req[http::field::origin]);
  if (draining_) {
    Reply r = error_reply(503, "shutting_down", "the server is shutting down; retry with another replica or later");
    r.headers.emplace_back("Retry-After", "5");
    r.close = true;
    return c->reply(std::move(r));
  }
  if (const auto denied = access_.check_origin(std::string(req[http::field::host]), origin)) {
    return c->reply(error_reply(denied->status, denied->code, denied->message));
  }
  if (const std::string allowed = access_.allow_origin(origin); !allowed.empty()) {
    c->add_reply_headers({{"Access-Control-Allow-Origin", allowed}, {"Vary", "Origin"}});
  }
  const Route* route = nullptr;
  for (const Route& r : routes) {
    if (r.prefix ? path.starts_with(r.path) && path.size() > std::string_view(r.path).size() : path == r.path) route = &r;
  }
  if (!route) return c->reply(error_reply(404, "not_found", fmt::format("{} {}: no such endpoint", std::string(req.method_string()), path)));
  const std::string allow = fmt::format("{}, OPTIONS", method_name(route->method));
  if (req.method() == http::verb::options) {  // a CORS preflight (its origin passed above) or a question
    Reply r = make_reply(204, "");
    r.headers = {{"Allow", allow}};
    if (!origin.empty()) {
      r.headers.insert(r.headers.end(), {{"Access-Control-Allow-Methods", allow},
                                         {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                                         {"Access-Control-Max-Age", "600"}});
    }
    metrics_.count_request("other", 204);
    return c->reply(std::move(r));
  }
  if (req.method() != route->method) {
    Reply r = error_reply(405, "method_not_allowed",
                          fmt::format("{} {}: this endpoint takes {}", std::string(req.method_string()), path, method_name(route->method)));
    r.headers.emplace_back("Allow", allow);
    return c->reply(std::move(r));
  }
  if (!route->open) {
    if (const auto denied = access_.check_key(std::string(req[http::field::authorization]))) {
      Reply r = error_reply(denied->status, denied->code, denied->message);
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return c->reply(std::move(r));
    }
  }
  try {
    route->run(*this, c, req, path);
  } catch (const std::exception& e) {  // a bug of ours: the client gets a 500, the server goes on
    c->reply(error_reply(500, "internal_error", fmt::format("internal error while answering {} {}", method_name(req.method()), path)));
  }
}

void HttpServer::completion(const std::shared_ptr<Connection>& c, const HttpRequest& req, bool chat) {
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  std::shared_ptr<Job> seq;
  ApiRequest ar;
  try {
    ar = parse_request(parse_json_body(req.body()), chat, opt_.defaults);
    SequenceRequest sr;
    if (chat) {
      sr.prompt = tokenizer_.encode(render_chat(tmpl_, ar.messages), tokenizer_.add_bos(), true);
    } else if (!ar.prompt_ids.empty()) {
      for (const int32_t id : ar.prompt_ids) {
        if (id >= tokenizer_.n_vocab()) bad_request("prompt", fmt::format("token id {} is outside the vocabulary of {}", id, tokenizer_.n_vocab()));
      }
      sr.prompt = ar.prompt_ids;
    } else {
      sr.prompt = tokenizer_.encode(ar.prompt, tokenizer_.add_bos(), true);
    }
    sr.params = ar.params;
    sr.stop = ar.stop;
    sr.press = ar.press;
    sr.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ar.timeout_s));
    Rejection rejected{};
    try {
      seq = scheduler_.submit(std::move(sr), &rejected);
    } catch (const Error& e) {
      const bool too_long = e.kind() == ErrorKind::kOutOfRange;
      throw ApiError(400, "invalid_request_error", chat ? "messages" : "prompt", too_long ? "context_length_exceeded" : "invalid_value", e.what());
    }
    if (!seq) {
      switch (rejected.kind) {
        case Rejection::kQueueFull:
          return c->reply(api_error(endpoint, ApiError(429, "server_busy", "", "queue_full", "the server is busy: " + rejected.message + "; retry later"), 2));
        case Rejection::kShuttingDown:
          return c->reply(api_error(endpoint, ApiError(503, "service_unavailable", "", "shutting_down", rejected.message), 5));
        case Rejection::kTooLarge:
          return c->reply(api_error(endpoint, ApiError(400, "invalid_request_error", "max_tokens", "kv_budget_exceeded", rejected.message)));
      }
    }
  } catch (const ApiError& e) {
    return c->reply(api_error(endpoint, e));
  }
  CompletionParams p;
  p.head = ResponseHead{fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", g_next_id++), chat, opt_.defaults.model_id,
                        static_cast<int64_t>(std::time(nullptr))};
  p.stream = ar.stream;
  p.include_usage = ar.include_usage;
  p.keep_alive_s = opt_.keep_alive_s;
  start_completion_stream(c, std::move(seq), p, [this, endpoint](int status) { metrics_.count_request(endpoint, status); });
}

}  // namespace snapkv::server

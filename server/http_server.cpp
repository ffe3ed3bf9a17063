#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <ctime>

#include "server/api_response.h"
#include "snapkv/error.h"
#include "snapkv/timer.h"

namespace snapkv::server {

using nlohmann::json;

namespace {

std::atomic<uint64_t> g_next_id{1};

const char* status_type(int status) {
  switch (status) {
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "request_too_large";
    case 429: return "server_busy";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

HttpServer::HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ChatTemplate tmpl, const ServerOptions& options,
                       size_t kv_budget, int max_batch, int max_queue)
    : scheduler_(scheduler), tokenizer_(tokenizer), tmpl_(std::move(tmpl)), opt_(options), kv_budget_(kv_budget),
      max_batch_(max_batch), svr_(std::make_unique<httplib::Server>()) {
  // One handler thread per running or queued request, and a few for quick endpoints.
  const size_t n_threads = static_cast<size_t>(max_batch + max_queue + 4);
  svr_->new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  svr_->set_payload_max_length(opt_.max_body);
  svr_->set_keep_alive_timeout(2);
  svr_->set_read_timeout(30);
  svr_->set_write_timeout(30);

  svr_->Post("/v1/chat/completions",
             [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, true); });
  svr_->Post("/v1/completions",
             [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, false); });
  svr_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const json body = {{"object", "list"},
                       {"data", json::array({{{"id", opt_.defaults.model_id},
                                              {"object", "model"},
                                              {"created", 0},
                                              {"owned_by", "snapkv"},
                                              {"context_length", scheduler_.n_ctx()}}})}};
    res.set_content(dump_json(body), "application/json");
    metrics_.count_request("/v1/models", 200);
  });
  svr_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
    metrics_.count_request("/health", 200);
  });
  svr_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    metrics_.count_request("/metrics", 200);
    res.set_content(metrics_.prometheus(scheduler_.metrics(), kv_budget_, max_batch_), "text/plain; version=0.0.4");
  });
  // A known endpoint asked with the wrong method: 405 with the method it takes.
  auto wrong_method = [this](const char* allow) {
    return [this, allow](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allow);
      reply_error(res, "other", ApiError(405, "invalid_request_error", "", "method_not_allowed",
                                         fmt::format("{} {}: this endpoint takes {}", req.method, req.path, allow)));
    };
  };
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) svr_->Get(path, wrong_method("POST"));
  for (const char* path : {"/v1/models", "/health", "/metrics"}) svr_->Post(path, wrong_method("GET"));
  // Errors httplib raises itself (unknown route, body over the limit, malformed request line)
  // get the same JSON shape as ours.
  svr_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = fmt::format("{} {}: HTTP status {}", req.method, req.path, res.status);
    if (res.status == 404) message = fmt::format("{} {}: no such endpoint", req.method, req.path);
    if (res.status == 413) message = fmt::format("the request body is larger than the limit of {} bytes", opt_.max_body);
    metrics_.count_request("other", res.status);
    res.set_content(dump_json(error_body(ApiError(res.status, status_type(res.status), "", "", message))),
                    "application/json");
  });
  svr_->set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, "other", ApiError(500, "server_error", "", "", what));
  });
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const int port = opt_.port == 0 ? svr_->bind_to_any_port(opt_.host) : (svr_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                fmt::format("cannot listen on {}:{} (address in use or not available)", opt_.host, opt_.port));
  }
  return port;
}

void HttpServer::serve() { svr_->listen_after_bind(); }

void HttpServer::stop() { svr_->stop(); }

void HttpServer::reply_error(httplib::Response& res, const std::string& endpoint, const ApiError& e, int retry_after_s) {
  res.status = e.status;
  if (retry_after_s > 0) res.set_header("Retry-After", std::to_string(retry_after_s));
  res.set_content(dump_json(error_body(e)), "application/json");
  metrics_.count_request(endpoint, e.status);
}

void HttpServer::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  std::shared_ptr<Job> seq;
  ApiRequest ar;
  try {
    ar = parse_request(parse_json_body(req.body), chat, opt_.defaults);
    SequenceRequest sr;
    if (chat) {
      sr.prompt = tokenizer_.encode(apply_chat_template(tmpl_, ar.messages, true), tokenizer_.add_bos(), true);
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
          return reply_error(res, endpoint, ApiError(429, "server_busy", "", "queue_full", "the server is busy: " + rejected.message + "; retry later"), 2);
        case Rejection::kShuttingDown:
          return reply_error(res, endpoint, ApiError(503, "service_unavailable", "", "shutting_down", rejected.message), 5);
        case Rejection::kTooLarge:
          return reply_error(res, endpoint, ApiError(400, "invalid_request_error", "max_tokens", "kv_budget_exceeded", rejected.message));
      }
    }
  } catch (const ApiError& e) {
    return reply_error(res, endpoint, e);
  }

  // Wait for admission: until then the status can still say why the request did not run.
  Job::Update first;
  do {
    first = seq->next(std::chrono::milliseconds(200));
  } while (!first.started && !first.done);
  if (!first.started) {
    if (first.reason == FinishReason::kTimeout) {
      return reply_error(res, endpoint, ApiError(503, "service_unavailable", "", "timeout", first.error), 2);
    }
    if (first.reason == FinishReason::kCancelled) {
      return reply_error(res, endpoint, ApiError(503, "service_unavailable", "", "shutting_down", first.error), 5);
    }
    return reply_error(res, endpoint, ApiError(500, "server_error", "", "", first.error));
  }
  metrics_.count_request(endpoint, 200);

  const ResponseHead head{fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", g_next_id++), chat, opt_.defaults.model_id,
                          static_cast<int64_t>(std::time(nullptr))};
  const double keep_alive_s = opt_.keep_alive_s;
  const bool stream = ar.stream, include_usage = ar.include_usage;
  res.set_chunked_content_provider(
      stream ? "text/event-stream" : "application/json",
      [seq, head, first, keep_alive_s, stream, include_usage](size_t, httplib::DataSink& sink) {
        const auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        Job::Update u = first;
        std::string text;  // the whole answer (non-streaming)
        bool first_chunk = true;
        Timer idle;
        for (;;) {
          if (!u.text.empty()) {
            if (stream) {
              if (!write(sse_event(chunk_body(head, u.text, first_chunk, FinishReason::kNone)))) break;
              first_chunk = false;
              idle.reset();
            } else {
              text += u.text;
            }
          }
          if (u.done) {
            bool ok = true;
            if (u.reason == FinishReason::kError) {
              const ApiError e(500, "server_error", "", "", u.error);
              ok = write(stream ? sse_event(error_body(e)) : dump_json(error_body(e)));
            } else if (stream) {
              ok = write(sse_event(chunk_body(head, "", first_chunk, u.reason)));
              if (ok && include_usage) ok = write(sse_event(usage_chunk_body(head, u.stats)));
            } else {
              ok = write(dump_json(completion_body(head, text, u.reason, u.stats)));
            }
            if (ok && stream) ok = write(kSseDone);
            if (ok) sink.done();
            return ok;
          }
          if (idle.seconds() >= keep_alive_s) {
            if (!write(stream ? ": keep-alive\n\n" : " ")) break;
            idle.reset();
          }
          u = seq->next(std::chrono::milliseconds(100));
        }
        seq->cancel();  // the client is gone
        return false;
      },
      [seq](bool) { seq->cancel(); });
}

}  // namespace snapkv::server

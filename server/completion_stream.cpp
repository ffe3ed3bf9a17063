#include "server/completion_stream.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>

#include "server/api_request.h"

namespace snapkv::server {

namespace net = boost::asio;

namespace {

class CompletionStream : public std::enable_shared_from_this<CompletionStream> {
 public:
  CompletionStream(std::shared_ptr<Connection> conn, std::shared_ptr<Job> job, const CompletionParams& p,
                   std::function<void(int)> on_end)
      : conn_(std::move(conn)), job_(std::move(job)), p_(p), on_end_(std::move(on_end)), timer_(conn_->executor()) {}

  void start() {
    conn_->on_gone([job = job_] { job->cancel(); });
    if (p_.stream) conn_->begin_stream(200, "text/event-stream");
    head_sent_ = p_.stream;
    std::weak_ptr<CompletionStream> weak = weak_from_this();
    job_->on_update([weak, ex = conn_->executor()] {
      const auto self = weak.lock();
      if (!self || self->pump_posted_.exchange(true)) return;
      net::post(ex, [self] {
        self->pump_posted_ = false;
        self->pump();
      });
    });
    arm_timer();
  }

 private:
  void pump() {
    if (ended_) return;
    Job::Update u = job_->next(std::chrono::milliseconds(0));
    if (!head_sent_) {
      if (u.done && !u.started) return end_with_error(u);
      if (!u.started) return;
      conn_->begin_stream(200, "application/json");
      head_sent_ = true;
    }
    if (!u.text.empty()) {
      if (p_.stream) {
        conn_->send(sse_event(chunk_body(p_.head, u.text, first_chunk_, FinishReason::kNone)));
        first_chunk_ = false;
      } else {
        text_ += u.text;
      }
    }
    if (!u.done) return;
    if (u.reason == FinishReason::kError) {
      const ApiError e(500, "server_error", "", "", u.error);
      conn_->send(p_.stream ? sse_event(error_body(e)) : dump_json(error_body(e)));
    } else if (p_.stream) {
      conn_->send(sse_event(chunk_body(p_.head, "", first_chunk_, u.reason)));
      if (p_.include_usage) conn_->send(sse_event(usage_chunk_body(p_.head, u.stats)));
    } else {
      conn_->send(dump_json(completion_body(p_.head, text_, u.reason, u.stats)));
    }
    if (p_.stream) conn_->send(kSseDone);
    conn_->end_stream();
    end(200);
  }

  // A whole completion that never started: the status still says why.
  void end_with_error(const Job::Update& u) {
    Reply r;
    ApiError e(500, "server_error", "", "", u.error);
    if (u.reason == FinishReason::kTimeout) {
      e = ApiError(503, "service_unavailable", "", "timeout", u.error);
      r.headers = {{"Retry-After", "2"}};
    } else if (u.reason == FinishReason::kShutdown || u.reason == FinishReason::kCancelled) {
      e = ApiError(503, "service_unavailable", "", "shutting_down", u.error);
      r.headers = {{"Retry-After", "5"}};
    }
    r.status = e.status;
    r.body = dump_json(error_body(e));
    conn_->reply(std::move(r));
    end(e.status);
  }

  void end(int status) {
    ended_ = true;
    timer_.cancel();
    if (on_end_) std::exchange(on_end_, nullptr)(status);
  }

  // Keep-alive writes while nothing else is written; they also find a client that went away.
  void arm_timer() {
    timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(p_.keep_alive_s)));
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->ended_) return;
      if (self->conn_->gone()) return self->end(499);  // the job was cancelled; nobody reads the end
      if (self->head_sent_ && self->conn_->seconds_since_write() >= self->p_.keep_alive_s) {
        self->conn_->send(self->p_.stream ? ": keep-alive\n\n" : " ");
      }
      self->arm_timer();
    });
  }

  std::shared_ptr<Connection> conn_;
  std::shared_ptr<Job> job_;
  CompletionParams p_;
  std::function<void(int)> on_end_;
  net::steady_timer timer_;
  std::atomic<bool> pump_posted_{false};
  bool head_sent_ = false, first_chunk_ = true, ended_ = false;
  std::string text_;
};

}  // namespace

void start_completion_stream(const std::shared_ptr<Connection>& conn, std::shared_ptr<Job> job,
                             const CompletionParams& params, std::function<void(int status)> on_end) {
  std::make_shared<CompletionStream>(conn, std::move(job), params, std::move(on_end))->start();
}

}  // namespace snapkv::server

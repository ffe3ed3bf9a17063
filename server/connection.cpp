#include "server/connection.h"

#include <fmt/format.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>

namespace snapkv::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

Connection::Connection(net::ip::tcp::socket socket, const ConnectionLimits& limits, ConnectionOwner& owner,
                       std::shared_ptr<std::atomic<int>> open_count)
    : stream_(std::move(socket)), limits_(limits), owner_(owner), open_count_(std::move(open_count)),
      deadline_(stream_.get_executor()), last_write_(std::chrono::steady_clock::now()) {
  ++*open_count_;
}

Connection::~Connection() { --*open_count_; }

void Connection::start() { read_request(); }

void Connection::refuse(Reply reply) {
  in_request_ = true;
  reply.close = true;
  this->reply(std::move(reply));
}

void Connection::read_request() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser_->body_limit(limits_.max_body);
  reply_headers_.clear();
  read_deadline(limits_.header_timeout_s);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(beast::error_code ec) {
  ++read_number_;
  deadline_.cancel();
  if (ec) return read_failed(ec);
  const HttpRequest& req = parser_->get();
  version_ = req.version();
  const auto n_fields = std::distance(req.begin(), req.end());
  if (n_fields > limits_.max_header_fields) {
    return fail(431, "headers_too_large",
                fmt::format("the request has {} header fields; at most {} are accepted", n_fields, limits_.max_header_fields));
  }
  if (version_ >= 11 && req.find(http::field::host) == req.end()) {
    return fail(400, "missing_host", "an HTTP/1.1 request must have a Host header");
  }
  if (req.find(http::field::transfer_encoding) != req.end() && !parser_->chunked()) {
    return fail(400, "bad_transfer_encoding", "the only Transfer-Encoding accepted is chunked (as the last coding)");
  }
  if (beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
    // The client waits for this before it sends the body.
    const auto self = shared_from_this();
    auto line = std::make_shared<std::string>(fmt::format("HTTP/1.{} 100 Continue\r\n\r\n", version_ % 10));
    stream_.expires_after(seconds(limits_.write_timeout_s));
    net::async_write(stream_, net::buffer(*line), [self, line](beast::error_code wec, size_t) {
      if (wec) return self->close_gracefully();
      self->read_body();
    });
    return;
  }
  read_body();
}

void Connection::read_body() {
  read_deadline(limits_.body_timeout_s);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
}

void Connection::on_body(beast::error_code ec) {
  ++read_number_;
  deadline_.cancel();
  if (ec) return read_failed(ec);
  HttpRequest req = parser_->release();
  keep_alive_ = req.keep_alive();
  in_request_ = handled_ = true;
  chunked_ = false;
  owner_.handle(shared_from_this(), req);
}

// A read's deadline cancels the read (the stream's own expiry would close the socket, leaving
// no way to say 408).
void Connection::read_deadline(double s) {
  stream_.expires_never();
  timed_out_ = false;
  const unsigned read = ++read_number_;
  deadline_.expires_after(seconds(s));
  deadline_.async_wait([self = shared_from_this(), read](beast::error_code ec) {
    if (ec || read != self->read_number_) return;  // cancelled, or fired just after its read ended
    self->timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

void Connection::read_failed(beast::error_code ec) {
  const bool started = parser_ && parser_->got_some();
  if (timed_out_ && started) {
    return fail(408, "request_timeout",
                fmt::format("the request did not arrive in time (headers within {} s, the body within {} s)",
                            limits_.header_timeout_s, limits_.body_timeout_s));
  }
  if (timed_out_ || ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::operation_aborted) {
    return close_gracefully();  // the client closed, or an idle keep-alive connection timed out
  }
  if (ec == http::error::body_limit) {
    return fail(413, "request_too_large", fmt::format("the request body is larger than the limit of {} bytes", limits_.max_body));
  }
  if (ec == http::error::header_limit) {
    return fail(431, "headers_too_large",
                fmt::format("the request line and headers are larger than the limit of {} bytes", limits_.max_header_bytes));
  }
  if (ec == http::error::bad_content_length) {
    return fail(400, "bad_content_length", "Content-Length is not a non-negative number, or is given twice with different values");
  }
  if (ec == http::error::bad_transfer_encoding) {
    return fail(400, "bad_transfer_encoding", "Transfer-Encoding is given twice or together with Content-Length");
  }
  return fail(400, "malformed_request", fmt::format("the request is not well-formed HTTP/1.1 ({})", ec.message()));
}

void Connection::fail(int status, const std::string& code, const std::string& message) {
  Reply r = owner_.error_reply(status, code, message);
  r.close = true;
  in_request_ = true;
  reply(std::move(r));
}

std::string Connection::head(int status, const std::string& content_type, const Headers& headers, bool keep_alive,
                             std::optional<size_t> content_length, bool chunked) const {
  std::string h = fmt::format("HTTP/1.{} {} {}\r\nServer: snapkv\r\nContent-Type: {}\r\n", version_ == 10 ? 0 : 1, status,
                              std::string_view(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))),
                              content_type);
  if (content_length) h += fmt::format("Content-Length: {}\r\n", *content_length);
  if (chunked) h += "Transfer-Encoding: chunked\r\n";
  if (!keep_alive) {
    h += "Connection: close\r\n";
  } else if (version_ == 10) {
    h += "Connection: keep-alive\r\n";
  }
  for (const auto& [k, v] : headers) h += fmt::format("{}: {}\r\n", k, v);
  for (const auto& [k, v] : reply_headers_) h += fmt::format("{}: {}\r\n", k, v);
  return h + "\r\n";
}

void Connection::add_reply_headers(Headers h) {
  reply_headers_.insert(reply_headers_.end(), std::make_move_iterator(h.begin()), std::make_move_iterator(h.end()));
}

void Connection::reply(Reply r) {
  if (!in_request_) return;
  in_request_ = false;
  const bool keep = keep_alive_ && !r.close;
  queue(head(r.status, r.content_type, r.headers, keep, r.body.size(), false) + r.body);
  finish_request(keep ? After::kReadNext : After::kClose);
}

void Connection::begin_stream(int status, const std::string& content_type) {
  // HTTP/1.0 has no chunked encoding: the body then ends when the connection closes.
  chunked_ = version_ >= 11;
  keep_alive_ = keep_alive_ && chunked_;
  queue(head(status, content_type, {{"Cache-Control", "no-cache"}}, keep_alive_, std::nullopt, chunked_));
}

void Connection::send(std::string piece) {
  if (gone_ || piece.empty()) return;
  queue(chunked_ ? fmt::format("{:x}\r\n{}\r\n", piece.size(), piece) : std::move(piece));
}

void Connection::end_stream() {
  if (!in_request_) return;
  in_request_ = false;
  if (chunked_) queue("0\r\n\r\n");
  finish_request(keep_alive_ ? After::kReadNext : After::kClose);
}

void Connection::finish_request(After after) {
  after_writes_ = after;
  if (!writing_) write_next();
}

double Connection::seconds_since_write() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_write_).count();
}

void Connection::queue(std::string bytes) {
  if (gone_ || closed_) return;
  out_.push_back(std::move(bytes));
  last_write_ = std::chrono::steady_clock::now();
  if (!writing_) write_next();
}

void Connection::write_next() {
  if (gone_ || closed_) return;
  if (out_.empty()) {
    writing_ = false;
    const After after = std::exchange(after_writes_, After::kNothing);
    if (after == After::kNothing) return;
    if (std::exchange(handled_, false)) owner_.request_done();
    if (after == After::kReadNext) return read_request();
    return close_gracefully();
  }
  writing_ = true;
  stream_.expires_after(seconds(limits_.write_timeout_s));
  net::async_write(stream_, net::buffer(out_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
    self->out_.pop_front();
    if (ec) return self->lost();
    self->write_next();
  });
}

void Connection::lost() {
  if (gone_) return;
  gone_ = true;
  writing_ = false;
  out_.clear();
  if (on_gone_) std::exchange(on_gone_, nullptr)();
  if (std::exchange(handled_, false)) owner_.request_done();
  beast::error_code ec;
  stream_.socket().close(ec);
  closed_ = true;
}

// Half-closes, then reads what the client still sends for a moment before closing, so that a
// client still writing (a body over the limit) gets our reply instead of a reset.
void Connection::close_gracefully() {
  if (closed_) return;
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (ec) {
    stream_.socket().close(ec);
    closed_ = true;
    return;
  }
  stream_.expires_after(std::chrono::seconds(2));
  drain_then_close();
}

void Connection::drain_then_close() {
  stream_.async_read_some(net::buffer(discard_), [self = shared_from_this()](beast::error_code ec, size_t) {
    if (!ec) return self->drain_then_close();
    beast::error_code ignored;
    self->stream_.socket().close(ignored);
    self->closed_ = true;
  });
}

}  // namespace snapkv::server

#pragma once
// One client connection: HTTP/1.1 (and 1.0) over TCP with Boost.Beast on Asio. It reads one
// request at a time under limits and deadlines, hands each complete request to its owner and
// writes the owner's reply: whole, or streamed (chunked on HTTP/1.1, close-delimited on 1.0).
// Pipelined requests wait in the read buffer and are answered in order.
//
// What it refuses itself, before the owner sees anything (then it closes the connection):
//   413  a body over max_body, plain or chunked, as soon as the limit is crossed;
//   431  a header block over max_header_bytes or with more than max_header_fields fields;
//   400  malformed framing: a bad or conflicting Content-Length (different values), a
//        Transfer-Encoding other than chunked, HTTP/1.1 without Host, a bad request line;
//   408  a request started but not complete in time (the headers within header_timeout_s, the
//        body within body_timeout_s); an idle keep-alive connection just closes then.
// Every handler runs on the connection's strand, so a connection needs no locks.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace snapkv::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// A whole reply.
struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  Headers headers;
  bool close = false;  // close the connection after it
};

struct ConnectionLimits {
  size_t max_body = size_t{4} << 20;
  size_t max_header_bytes = size_t{32} << 10;  // request line and fields together
  int max_header_fields = 100;
  double header_timeout_s = 10;  // from the first byte (or the last reply) to the end of the headers
  double body_timeout_s = 30;    // for the whole body
  double write_timeout_s = 30;   // for each write; a client that stops reading is dropped
};

class Connection;

// What a connection's owner (the server) provides.
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  // A complete request; the owner answers with reply() or a stream, now or later.
  virtual void handle(const std::shared_ptr<Connection>& c, HttpRequest& req) = 0;
  // The body of an error the connection answers itself (status, OpenAI error code, message).
  virtual Reply error_reply(int status, const std::string& code, const std::string& message) = 0;
  // A request handle() got is answered: its reply written, or the client gone.
  virtual void request_done() = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, const ConnectionLimits& limits, ConnectionOwner& owner,
             std::shared_ptr<std::atomic<int>> open_count);
  ~Connection();

  void start();              // reads the first request
  void refuse(Reply reply);  // answers without reading (too many connections) and closes

  // Headers added to every reply to the current request (CORS).
  void add_reply_headers(Headers h);
  // Answers the current request: reply(), or begin_stream(), send()..., end_stream().
  void reply(Reply reply);
  void begin_stream(int status, const std::string& content_type);
  void send(std::string piece);
  void end_stream();
  // Called once when the client goes (a write fails or times out) while a request is answered.
  void on_gone(std::function<void()> fn) { on_gone_ = std::move(fn); }
  bool gone() const { return gone_; }
  double seconds_since_write() const;
  boost::asio::any_io_executor executor() { return stream_.get_executor(); }

 private:
  enum class After { kNothing, kReadNext, kClose };

  void read_request();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void read_deadline(double seconds);
  void read_failed(boost::beast::error_code ec);
  void fail(int status, const std::string& code, const std::string& message);
  std::string head(int status, const std::string& content_type, const Headers& headers, bool keep_alive,
                   std::optional<size_t> content_length, bool chunked) const;
  void queue(std::string bytes);
  void write_next();
  void finish_request(After after);
  void lost();
  void close_gracefully();
  void drain_then_close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  ConnectionLimits limits_;
  ConnectionOwner& owner_;
  std::shared_ptr<std::atomic<int>> open_count_;
  boost::asio::steady_timer deadline_;  // of the read in progress
  unsigned read_number_ = 0;            // which read the deadline belongs to
  bool timed_out_ = false;

  unsigned version_ = 11;  // of the current request
  bool keep_alive_ = false, in_request_ = false, chunked_ = false, gone_ = false, closed_ = false;
  bool handled_ = false;  // the current request went to the owner, which awaits request_done()
  Headers reply_headers_;
  std::deque<std::string> out_;
  bool writing_ = false;
  After after_writes_ = After::kNothing;
  std::function<void()> on_gone_;
  std::chrono::steady_clock::time_point last_write_;
  char discard_[4096];
};

}  // namespace snapkv::server

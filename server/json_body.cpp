#include "server/json_body.h"

#include <fmt/format.h>

#include <vector>

#include "server/api_request.h"

namespace snapkv::server {

using nlohmann::json;

namespace {

// nlohmann's DOM builder, plus the path of the value being read ("messages[0].content"), so
// that an error raised on a value can name its field.
class PathTrackingSax {
 public:
  explicit PathTrackingSax(json& out) : dom_(out, /*allow_exceptions=*/false) {}

  bool null() { return value(), dom_.null(); }
  bool boolean(bool v) { return value(), dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value(), dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(), dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value(), dom_.number_float(v, s); }
  bool string(json::string_t& v) { return value(), dom_.string(v); }
  bool binary(json::binary_t& v) { return value(), dom_.binary(v); }
  bool start_object(std::size_t n) {
    value();
    path_.push_back({"", -1});
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    path_.back().key = k;
    return dom_.key(k);
  }
  bool end_object() {
    path_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    value();
    path_.push_back({"", 0});
    return dom_.start_array(n);
  }
  bool end_array() {
    path_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range.406: a number beyond a double
      const std::string field = current_field();
      throw ApiError(400, "invalid_request_error", field, "invalid_value",
                     fmt::format("'{}' holds the number {}, which is out of range", field.empty() ? "body" : field, token));
    }
    throw ApiError(400, "invalid_request_error", "", "invalid_json",
                   fmt::format("the request body is not valid JSON (at byte {}, near '{}')", position, token.substr(0, 40)));
  }

 private:
  struct Level {
    std::string key;  // objects: the current key
    int index;        // arrays: the next element's index; -1 for objects
  };
  // A value starts: inside an array it is the next element.
  void value() {
    if (!path_.empty() && path_.back().index >= 0) path_.back().index++;
  }
  // The field of the value that failed (it was not counted: the error came before value()).
  std::string current_field() const {
    std::string out;
    for (size_t i = 0; i < path_.size(); ++i) {
      const Level& l = path_[i];
      if (l.index < 0) {
        out += (out.empty() ? "" : ".") + l.key;
      } else {
        out += fmt::format("[{}]", i + 1 == path_.size() ? l.index : l.index - 1);
      }
    }
    return out;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<Level> path_;
};

}  // namespace

json parse_json_body(const std::string& body) {
  if (body.empty()) throw ApiError(400, "invalid_request_error", "", "invalid_json", "the request body is empty (a JSON object is expected)");
  json j;
  PathTrackingSax sax(j);
  json::sax_parse(body, &sax);
  if (!j.is_object()) bad_request("", "the request body must be a JSON object");
  return j;
}

}  // namespace snapkv::server

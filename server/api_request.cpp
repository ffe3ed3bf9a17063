#include "server/api_request.h"

#include <fmt/format.h>

#include <cmath>

namespace snapkv::server {

using nlohmann::json;

namespace {

constexpr int kMaxTokensLimit = 1 << 20;
constexpr size_t kMaxStops = 16;

const json* field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

double number_in(const json& obj, const char* key, double lo, double hi, double def, const std::string& prefix = "") {
  const json* v = field(obj, key);
  if (!v) return def;
  if (!v->is_number()) bad_request(prefix + key, fmt::format("'{}{}' must be a number", prefix, key));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    bad_request(prefix + key, fmt::format("'{}{}' must be between {} and {}, got {}", prefix, key, lo, hi, x));
  }
  return x;
}

int64_t int_in(const json& obj, const char* key, int64_t lo, int64_t hi, int64_t def, const std::string& prefix = "") {
  const json* v = field(obj, key);
  if (!v) return def;
  const auto out_of_range = [&] {
    bad_request(prefix + key, fmt::format("'{}{}' must be between {} and {}, got {}", prefix, key, lo, hi, v->dump()));
  };
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) out_of_range();
  int64_t x = 0;
  if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>()) {
    // 1e3 is an integer too; beyond +-2^62 a double is only taken as out of range.
    const double d = v->get<double>();
    if (std::fabs(d) > 4.6e18) out_of_range();
    x = static_cast<int64_t>(d);
  } else {
    bad_request(prefix + key, fmt::format("'{}{}' must be an integer", prefix, key));
  }
  if (x < lo || x > hi) out_of_range();
  return x;
}

bool bool_of(const json& obj, const char* key, bool def) {
  const json* v = field(obj, key);
  if (!v) return def;
  if (!v->is_boolean()) bad_request(key, fmt::format("'{}' must be true or false", key));
  return v->get<bool>();
}

std::string string_of(const json& v, const std::string& param) {
  if (!v.is_string()) bad_request(param, fmt::format("'{}' must be a string", param));
  return v.get<std::string>();
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts.
std::string content_of(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad_request(param, fmt::format("'{}' must be a string or an array of text parts", param));
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const bool text_part = v[i].is_object() && v[i].contains("type") && v[i]["type"] == "text" && v[i].contains("text");
    if (!text_part) {
      bad_request(p, fmt::format("'{}' must be a text part {{\"type\": \"text\", \"text\": ...}} (only text is supported)", p));
    }
    text += string_of(v[i]["text"], p + ".text");
  }
  return text;
}

std::vector<ChatMessage> messages_of(const json& body) {
  const json* v = field(body, "messages");
  if (!v) bad_request("messages", "'messages' is required");
  if (!v->is_array() || v->empty()) bad_request("messages", "'messages' must be a non-empty array");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad_request(p, fmt::format("'{}' must be an object with role and content", p));
    const json* role = field(m, "role");
    if (!role) bad_request(p + ".role", fmt::format("'{}.role' is required", p));
    ChatMessage msg{string_of(*role, p + ".role"), ""};
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "developer") {
      bad_request(p + ".role", fmt::format("'{}.role' must be system, developer, user or assistant, got '{}'", p, msg.role));
    }
    if (msg.role == "developer") msg.role = "system";
    const json* content = field(m, "content");
    if (!content) bad_request(p + ".content", fmt::format("'{}.content' is required", p));
    msg.content = content_of(*content, p + ".content");
    out.push_back(std::move(msg));
  }
  return out;
}

// prompt: a string, an array of one string, or an array of token ids.
void prompt_of(const json& body, ApiRequest& r) {
  const json* v = field(body, "prompt");
  if (!v) bad_request("prompt", "'prompt' is required");
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
  } else if (v->is_array() && v->size() == 1 && (*v)[0].is_string()) {
    r.prompt = (*v)[0].get<std::string>();
  } else if (v->is_array() && !v->empty() && (*v)[0].is_number_integer()) {
    for (const json& id : *v) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        bad_request("prompt", "'prompt' as token ids must be an array of non-negative integers");
      }
      r.prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  } else {
    bad_request("prompt", "'prompt' must be a string, an array of one string or an array of token ids "
                          "(several prompts per request are not supported)");
  }
  if (r.prompt.empty() && r.prompt_ids.empty()) bad_request("prompt", "'prompt' is empty");
}

std::vector<std::string> stops_of(const json& body) {
  const json* v = field(body, "stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array() || v->size() > kMaxStops) {
    bad_request("stop", fmt::format("'stop' must be a string or an array of at most {} strings", kMaxStops));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) out.push_back(string_of((*v)[i], fmt::format("stop[{}]", i)));
  return out;
}

// A JSON value as the press options table takes it; other types (true, arrays, objects) are
// rejected by the table with the field's expected type.
PressValue press_value(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    return v.get<int64_t>();
  }
  if (v.is_number()) return v.get<double>();
  return std::monostate{};
}

// kv_compression: the server's press options overlaid by the request's, field by field through
// the press options table (snapkv/press.h), whose names and checks the CLI flags share.
PressConfig press_of(const json& body, const PressConfig& def) {
  const json* v = field(body, "kv_compression");
  if (!v) return def;
  const std::string pre = "kv_compression.";
  if (!v->is_object()) bad_request("kv_compression", "'kv_compression' must be an object");
  PressConfig p = def;
  for (const auto& [key, val] : v->items()) {
    const PressParam* param = find_press_param(key);
    if (!param) {
      std::vector<std::string> known;
      for (const PressParam& k : press_params()) known.push_back(k.name);
      bad_request(pre + key, fmt::format("unknown field '{}{}' (known: {})", pre, key, fmt::join(known, ", ")));
    }
    if (val.is_null()) continue;
    if (std::string err = param->set(p, press_value(val), fmt::format("'{}{}'", pre, key)); !err.empty()) {
      bad_request(pre + key, err);
    }
  }
  if (const std::string err = p.validate(); !err.empty()) bad_request("kv_compression", "kv_compression: " + err);
  return p;
}

}  // namespace

void bad_request(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", param, "invalid_value", message);
}

json error_body(const ApiError& e) {
  const auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {{"error", {{"message", e.what()}, {"type", e.type}, {"param", or_null(e.param)}, {"code", or_null(e.code)}}}};
}

json parse_json_body(const std::string& body) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) bad_request("", "the request body must be a JSON object");
    return j;
  } catch (const json::parse_error& e) {
    throw ApiError(400, "invalid_request_error", "", "invalid_json",
                   fmt::format("the request body is not valid JSON: {}", e.what()));
  }
}

ApiRequest parse_request(const json& body, bool chat, const RequestDefaults& d) {
  ApiRequest r;
  r.chat = chat;
  if (const json* m = field(body, "model")) {
    const std::string id = string_of(*m, "model");
    if (id != d.model_id) {
      throw ApiError(404, "invalid_request_error", "model", "model_not_found",
                     fmt::format("the model '{}' does not exist; this server serves '{}'", id, d.model_id));
    }
  }
  if (chat) {
    r.messages = messages_of(body);
  } else {
    prompt_of(body, r);
  }
  const char* max_key = field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.params.max_tokens = static_cast<int>(int_in(body, max_key, 0, kMaxTokensLimit, d.max_tokens));
  if (int_in(body, "n", 1, 1, 1) != 1) bad_request("n", "'n' must be 1");
  SamplingParams& s = r.params.sampling;
  s.temperature = static_cast<float>(number_in(body, "temperature", 0, 2, 1.0));
  s.top_p = static_cast<float>(number_in(body, "top_p", 0, 1, 1.0));
  s.top_k = static_cast<int>(int_in(body, "top_k", 0, 1 << 20, 0));
  s.min_p = static_cast<float>(number_in(body, "min_p", 0, 1, 0));
  s.repeat_penalty = static_cast<float>(number_in(body, "repeat_penalty", 0.01, 10, 1.0));
  s.seed = static_cast<uint64_t>(int_in(body, "seed", INT64_MIN, INT64_MAX, 0));
  for (const char* key : {"frequency_penalty", "presence_penalty"}) {
    if (number_in(body, key, -2, 2, 0) != 0) bad_request(key, fmt::format("'{}' is not supported (use repeat_penalty)", key));
  }
  if (const std::string err = s.validate(); !err.empty()) bad_request("", err);
  r.stop = stops_of(body);
  r.stream = bool_of(body, "stream", false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) bad_request("stream_options", "'stream_options' must be an object");
    r.include_usage = bool_of(*so, "include_usage", false);
  }
  r.timeout_s = number_in(body, "timeout", 0.001, 24 * 3600, d.timeout_s);
  r.press = press_of(body, d.press);
  return r;
}

}  // namespace snapkv::server

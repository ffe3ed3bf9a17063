#include "server/api_request.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

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

std::vector<ApiToolCall> tool_calls_of(const json& v, const std::string& param) {
  if (!v.is_array()) bad_request(param, fmt::format("'{}' must be an array", param));
  std::vector<ApiToolCall> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const json* fn = v[i].is_object() ? field(v[i], "function") : nullptr;
    if (!fn || !fn->is_object()) bad_request(p + ".function", fmt::format("'{}.function' must be an object with name and arguments", p));
    const json* name = field(*fn, "name");
    if (!name) bad_request(p + ".function.name", fmt::format("'{}.function.name' is required", p));
    ApiToolCall call{string_of(*name, p + ".function.name"), "{}"};
    if (const json* args = field(*fn, "arguments")) call.arguments = string_of(*args, p + ".function.arguments");
    out.push_back(std::move(call));
  }
  return out;
}

std::vector<ApiMessage> messages_of(const json& body) {
  const json* v = field(body, "messages");
  if (!v) bad_request("messages", "'messages' is required");
  if (!v->is_array() || v->empty()) bad_request("messages", "'messages' must be a non-empty array");
  std::vector<ApiMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad_request(p, fmt::format("'{}' must be an object with role and content", p));
    const json* role = field(m, "role");
    if (!role) bad_request(p + ".role", fmt::format("'{}.role' is required", p));
    ApiMessage msg{string_of(*role, p + ".role"), "", {}};
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "developer" && msg.role != "tool") {
      bad_request(p + ".role", fmt::format("'{}.role' must be system, developer, user, assistant or tool, got '{}'", p, msg.role));
    }
    if (msg.role == "developer") msg.role = "system";
    if (const json* calls = field(m, "tool_calls")) {
      if (msg.role != "assistant") bad_request(p + ".tool_calls", fmt::format("'{}.tool_calls' is for assistant messages only", p));
      msg.tool_calls = tool_calls_of(*calls, p + ".tool_calls");
    }
    const json* content = field(m, "content");
    if (content) {
      msg.content = content_of(*content, p + ".content");
    } else if (msg.tool_calls.empty()) {
      bad_request(p + ".content", fmt::format("'{}.content' is required (it may be null only beside tool_calls)", p));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// Fields that change what the answer must be and that this server does not implement: refused,
// never ignored. Present but inert values (no tools, plain text format) pass.
void refuse_unsupported(const json& body) {
  const auto refuse = [](const std::string& param, const std::string& why) {
    throw ApiError(400, "invalid_request_error", param, "unsupported_parameter", fmt::format("'{}' is not supported: {}", param, why));
  };
  if (bool_of(body, "logprobs", false)) refuse("logprobs", "this server does not return log probabilities");
  if (field(body, "top_logprobs")) refuse("top_logprobs", "this server does not return log probabilities");
  if (const json* tools = field(body, "tools"); tools && !(tools->is_array() && tools->empty())) {
    refuse("tools", "this server does not constrain output to tool calls (tool results in messages are accepted)");
  }
  if (const json* choice = field(body, "tool_choice"); choice && *choice != "none" && *choice != "auto") {
    refuse("tool_choice", "no tools are offered to the model");
  }
  for (const char* key : {"functions", "function_call"}) {
    if (field(body, key)) refuse(key, "use messages with role tool instead");
  }
  if (const json* format = field(body, "response_format")) {
    const bool text = format->is_object() && format->contains("type") && (*format)["type"] == "text";
    if (!text) refuse("response_format", "only {\"type\": \"text\"} is supported (no JSON mode or schema)");
  }
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

// speculation: {"mode": "prompt-lookup" | "draft" | "none", "k", "ngram_max", "ngram_min"} over
// the server's defaults; "draft" where the server has a draft model.
SpeculationParams speculation_of(const json& body, const SpeculationParams& def, bool has_draft) {
  const json* v = field(body, "speculation");
  if (!v) return def;
  const std::string pre = "speculation.";
  if (!v->is_object()) bad_request("speculation", "'speculation' must be an object");
  for (const auto& [key, val] : v->items()) {
    if (key != "mode" && key != "k" && key != "ngram_max" && key != "ngram_min") {
      bad_request(pre + key, fmt::format("unknown field '{}{}' (known: mode, k, ngram_max, ngram_min)", pre, key));
    }
  }
  SpeculationParams p = def;
  if (const json* mode = field(*v, "mode")) {
    const std::string name = string_of(*mode, pre + "mode");
    if (name == "draft" && !has_draft) {
      bad_request(pre + "mode", "speculation with a draft model: this server has none (serve --draft-model FILE)");
    }
    if (name != "prompt-lookup" && name != "draft" && name != "none") {
      bad_request(pre + "mode", fmt::format("'{}mode' must be prompt-lookup, draft or none, got '{}'", pre, name));
    }
    p.mode = parse_spec_mode(name);
  }
  p.k = static_cast<int>(int_in(*v, "k", 1, 16, p.k, pre));
  p.ngram_max = static_cast<int>(int_in(*v, "ngram_max", 1, 16, p.ngram_max, pre));
  p.ngram_min = static_cast<int>(int_in(*v, "ngram_min", 1, 16, p.ngram_min, pre));
  if (p.ngram_min > p.ngram_max) bad_request(pre + "ngram_min", "'speculation.ngram_min' must be <= 'speculation.ngram_max'");
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

ApiError model_not_found(const std::string& id, const std::string& served) {
  return ApiError(404, "invalid_request_error", "model", "model_not_found",
                  fmt::format("the model '{}' does not exist; this server serves '{}'", id, served));
}

ApiRequest parse_request(const json& body, bool chat, const RequestDefaults& d) {
  ApiRequest r;
  r.chat = chat;
  if (const json* m = field(body, "model")) {
    const std::string id = string_of(*m, "model");  // checked for its type even when any name is served
    if (d.strict_model && id != d.model_id) throw model_not_found(id, d.model_id);
  }
  refuse_unsupported(body);
  if (chat) {
    r.messages = messages_of(body);
  } else {
    prompt_of(body, r);
  }
  const char* max_key = field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.params.max_tokens = static_cast<int>(int_in(body, max_key, 0, kMaxTokensLimit, d.max_tokens));
  if (int_in(body, "n", 1, 1, 1) != 1) bad_request("n", "'n' must be 1");
  SamplingParams& s = r.params.sampling;
  const SamplingParams& ds = d.sampling;
  s = ds;
  s.temperature = static_cast<float>(number_in(body, "temperature", 0, 2, ds.temperature));
  s.top_p = static_cast<float>(number_in(body, "top_p", 0, 1, ds.top_p));
  s.top_k = static_cast<int>(int_in(body, "top_k", 0, 1 << 20, ds.top_k));
  s.min_p = static_cast<float>(number_in(body, "min_p", 0, 1, ds.min_p));
  s.repeat_penalty = static_cast<float>(number_in(body, "repeat_penalty", 0.01, 10, ds.repeat_penalty));
  if (field(body, "seed")) {
    s.seed = static_cast<uint64_t>(int_in(body, "seed", INT64_MIN, INT64_MAX, 0));
  } else {
    s.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();  // as OpenAI: a new draw each time
  }
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
  r.params.speculation = speculation_of(body, d.speculation, d.draft_model);
  return r;
}

std::string render_chat(const ChatTemplate& tmpl, const std::vector<ApiMessage>& messages) {
  const bool chatml = tmpl.kind == ChatTemplateKind::kChatML, llama3 = tmpl.kind == ChatTemplateKind::kLlama3;
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ApiMessage& m = messages[i];
    if ((m.role == "tool" || !m.tool_calls.empty()) && !chatml && !llama3) {
      const std::string p = fmt::format("messages[{}]", i);
      bad_request(m.role == "tool" ? p + ".role" : p + ".tool_calls",
                  fmt::format("the model's chat template ({}) has no place for tool calls or tool results",
                              chat_template_name(tmpl.kind)));
    }
    ChatMessage c{m.role == "tool" && llama3 ? "ipython" : m.role, m.content};
    for (const ApiToolCall& call : m.tool_calls) {
      // The arguments are JSON when the client sends JSON; otherwise they go in as a string.
      using ordered = nlohmann::ordered_json;  // "name" first, as the templates write it
      const ordered args = ordered::accept(call.arguments) ? ordered::parse(call.arguments) : ordered(call.arguments);
      const ordered j = {{"name", call.name}, {llama3 ? "parameters" : "arguments", args}};
      if (!c.content.empty()) c.content += "\n";
      c.content += chatml ? "<tool_call>\n" + j.dump() + "\n</tool_call>" : j.dump();
    }
    out.push_back(std::move(c));
  }
  return apply_chat_template(tmpl, out, true);
}

}  // namespace snapkv::server

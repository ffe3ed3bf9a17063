#include "server/api_response.h"

namespace snapkv::server {

using nlohmann::json;

const char* api_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kShutdown: return "shutdown";
    case FinishReason::kCancelled: return "cancelled";
    default: return "length";
  }
}

json usage_body(const SequenceStats& s) {
  return {{"prompt_tokens", s.n_prompt},
          {"completion_tokens", s.n_generated},
          {"total_tokens", s.n_prompt + s.n_generated},
          {"prompt_tokens_details", {{"cached_tokens", s.n_cached}}},
          {"kv_bytes", s.kv_bytes},
          {"kv_full_bytes", s.kv_full_bytes},
          {"prefill_seconds", s.prefill_s},
          {"decode_seconds", s.decode_s},
          {"queue_seconds", s.queue_s},
          {"speculation", {{"passes", s.n_passes}, {"drafted", s.n_drafted}, {"accepted", s.n_accepted}}}};
}

namespace {
json head(const ResponseHead& h, bool chunk) {
  const char* object = h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}
}  // namespace

json completion_body(const ResponseHead& h, const std::string& text, FinishReason reason, const SequenceStats& stats) {
  json body = head(h, false);
  json choice = {{"index", 0}, {"finish_reason", api_finish_reason(reason)}, {"logprobs", nullptr}};
  if (h.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  body["choices"] = json::array({choice});
  body["usage"] = usage_body(stats);
  return body;
}

json chunk_body(const ResponseHead& h, const std::string& text, bool first, FinishReason reason) {
  json body = head(h, true);
  json choice = {{"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = reason == FinishReason::kNone ? json(nullptr) : json(api_finish_reason(reason));
  if (h.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && reason == FinishReason::kNone)) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  body["choices"] = json::array({choice});
  return body;
}

json usage_chunk_body(const ResponseHead& h, const SequenceStats& stats) {
  json body = head(h, true);
  body["choices"] = json::array();
  body["usage"] = usage_body(stats);
  return body;
}

std::string dump_json(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& body) { return "data: " + dump_json(body) + "\n\n"; }

}  // namespace snapkv::server

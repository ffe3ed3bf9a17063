#pragma once
// OpenAI-compatible response bodies: whole completions, streamed chunks (SSE) and usage, for
// chat (chat.completion[.chunk]) and text (text_completion) requests.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "snapkv/scheduler.h"

namespace snapkv::server {

struct ResponseHead {
  std::string id;  // chatcmpl-... or cmpl-...
  bool chat = false;
  std::string model;
  int64_t created = 0;  // Unix seconds
};

// "stop", "length" (max_tokens or the context), and beyond OpenAI's values "timeout" (the
// request's deadline), "shutdown" (the server stopped) and "cancelled".
const char* api_finish_reason(FinishReason r);

// usage: prompt/completion/total tokens, and the KV cache held at the end vs the full cache.
nlohmann::json usage_body(const SequenceStats& s);

nlohmann::json completion_body(const ResponseHead& h, const std::string& text, FinishReason reason,
                               const SequenceStats& stats);

// One streamed chunk: text (the first chat chunk also carries the role) or, when reason is set,
// the closing chunk of the choice.
nlohmann::json chunk_body(const ResponseHead& h, const std::string& text, bool first, FinishReason reason);
// The last chunk when stream_options.include_usage is set: no choices, only usage.
nlohmann::json usage_chunk_body(const ResponseHead& h, const SequenceStats& stats);

// The body as text; invalid UTF-8 in generated text (a stream cut inside a character) is replaced.
std::string dump_json(const nlohmann::json& body);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& body);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace snapkv::server

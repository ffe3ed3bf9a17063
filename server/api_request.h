#pragma once
// OpenAI-compatible request bodies (/v1/chat/completions, /v1/completions) parsed and validated
// into what the scheduler runs. Every client mistake becomes an ApiError: an HTTP status and
// OpenAI's error object naming the offending field.
#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "snapkv/chat.h"
#include "snapkv/generate.h"
#include "snapkv/press.h"
#include "snapkv/sampling.h"

namespace snapkv::server {

struct ApiError : std::runtime_error {
  ApiError(int status_, std::string type_, std::string param_, std::string code_, const std::string& message)
      : std::runtime_error(message), status(status_), type(std::move(type_)), param(std::move(param_)),
        code(std::move(code_)) {}
  int status;
  std::string type, param, code;
};

// A 400 invalid_request_error about one field.
[[noreturn]] void bad_request(const std::string& param, const std::string& message);

// {"error": {"message", "type", "param", "code"}}, null where empty.
nlohmann::json error_body(const ApiError& e);

// 404 model_not_found for a model name this server does not serve.
ApiError model_not_found(const std::string& id, const std::string& served);

// What a request may leave out, and the limits of this server.
struct RequestDefaults {
  std::string model_id;          // the one model served
  bool strict_model = false;     // a request naming another model gets 404 (otherwise any name is served)
  int max_tokens = 512;          // when the request gives none
  double timeout_s = 600;        // when the request gives none
  PressConfig press;             // the server's compression, overlaid by kv_compression
  SpeculationParams speculation; // the server's speculation, overlaid by speculation
  bool draft_model = false;      // whether the server has a draft model (speculation "draft")
  // Sampling fields a request leaves out (serve: the model's recommended sampling or llama.cpp's
  // server defaults). The seed is never a default: without one each request draws its own.
  SamplingParams sampling;
};

// A tool call an assistant message made (OpenAI's tool_calls[].function).
struct ApiToolCall {
  std::string name;
  std::string arguments;  // JSON text, as the client sent it
};

// One chat message as the API gives it: roles system (developer), user, assistant and tool.
struct ApiMessage {
  std::string role;
  std::string content;
  std::vector<ApiToolCall> tool_calls;  // assistant only
};

struct ApiRequest {
  bool chat = false;
  std::vector<ApiMessage> messages;   // chat
  std::string prompt;                 // completions, as text
  std::vector<int32_t> prompt_ids;    // completions, as token ids (when given so)
  GenerateParams params;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  double timeout_s = 0;
  PressConfig press;
};

// Throws ApiError (400, or 404 for an unknown model) for anything malformed, of the wrong type or
// out of range. Unknown top-level fields are ignored, as OpenAI clients send extras; unknown
// kv_compression and speculation fields are errors.
ApiRequest parse_request(const nlohmann::json& body, bool chat, const RequestDefaults& defaults);

// The conversation in the model's chat template. Tool results and assistant tool calls go where
// the template has a place for them: ChatML as role "tool" and calls in <tool_call> tags (as
// Qwen2.5 and Hermes templates write them), Llama 3 as role "ipython" and calls as
// {"name", "parameters"} JSON (as Llama 3.1's does); other templates have none: ApiError(400).
std::string render_chat(const ChatTemplate& tmpl, const std::vector<ApiMessage>& messages);


}  // namespace snapkv::server

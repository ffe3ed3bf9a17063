// libFuzzer target: arbitrary bytes as a request body of both completion endpoints. Parsing (and
// rendering a chat in every template) must end in a request or an ApiError (a 4xx for the
// client), never another exception or a crash.
#include <cstdint>
#include <string>

#include "server/api_request.h"
#include "server/json_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  snapkv::server::RequestDefaults defaults;
  defaults.model_id = "smol";
  for (const bool chat : {true, false}) {
    try {
      const snapkv::server::ApiRequest r = snapkv::server::parse_request(snapkv::server::parse_json_body(body), chat, defaults);
      if (r.params.max_tokens < 0 || !r.press.validate().empty() || !r.params.sampling.validate().empty()) __builtin_trap();
      if (chat) {
        for (const auto kind : {snapkv::ChatTemplateKind::kChatML, snapkv::ChatTemplateKind::kLlama3,
                                snapkv::ChatTemplateKind::kMistral, snapkv::ChatTemplateKind::kGemma}) {
          try {
            snapkv::server::render_chat(snapkv::ChatTemplate{kind, std::nullopt}, r.messages);
          } catch (const snapkv::server::ApiError& e) {
            if (e.status != 400) __builtin_trap();
          }
        }
      }
    } catch (const snapkv::server::ApiError& e) {
      if (e.status < 400 || e.status >= 500) __builtin_trap();
    }
  }
  return 0;
}

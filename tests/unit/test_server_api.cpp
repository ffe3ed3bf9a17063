// Request parsing and validation of the OpenAI-compatible API: every class of bad input is an
// ApiError with the right status, field and a readable message; a full request maps to the
// engine's parameters.
#include <gtest/gtest.h>

#include "server/api_request.h"
#include "server/json_body.h"
#include "server/api_response.h"

namespace snapkv::server {
namespace {

using nlohmann::json;

RequestDefaults defaults() {
  RequestDefaults d;
  d.model_id = "smol";
  d.max_tokens = 100;
  d.press.press = "snapkv";
  d.press.capacity = 512;
  return d;
}

ApiError error_of(const std::string& body, bool chat = true) {
  try {
    parse_request(parse_json_body(body), chat, defaults());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "", "", "");
}

TEST(ServerApi, FullChatRequestMapsToEngineParameters) {
  const ApiRequest r = parse_request(parse_json_body(R"({
      "model": "smol", "messages": [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}]}],
      "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 3, "stop": ["\n", "END"],
      "stream": true, "stream_options": {"include_usage": true}, "timeout": 30, "user": "ignored",
      "kv_compression": {"press": "pyramidkv", "capacity": 256, "window": 16, "kernel": 5, "pool": "avg"}})"),
                                     true, defaults());
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "Hi!");
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.5f);
  EXPECT_EQ(r.params.sampling.top_k, 40);
  EXPECT_EQ(r.params.sampling.seed, 3u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_DOUBLE_EQ(r.timeout_s, 30);
  EXPECT_EQ(r.press.press, "pyramidkv");
  EXPECT_EQ(r.press.capacity, 256);
  EXPECT_EQ(r.press.window, 16);
  EXPECT_EQ(r.press.kernel, 5);
  EXPECT_EQ(r.press.pool, PoolKind::kAvg);
}

TEST(ServerApi, DefaultsComeFromTheServer) {
  const ApiRequest r = parse_request(parse_json_body(R"({"prompt": "Once upon a time"})"), false, defaults());
  EXPECT_EQ(r.prompt, "Once upon a time");
  EXPECT_EQ(r.params.max_tokens, 100);
  EXPECT_EQ(r.press.press, "snapkv");
  EXPECT_EQ(r.press.capacity, 512);
  EXPECT_FALSE(r.stream);
  const ApiRequest ids = parse_request(parse_json_body(R"({"prompt": [1, 2, 3], "max_completion_tokens": 0})"), false,
                                       defaults());
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ids.params.max_tokens, 0);
}

TEST(ServerApi, MalformedJsonIs400) {
  for (const char* body : {"", "{", "{\"messages\": [}", "[1, 2]", "\"text\"", "{\"a\": 1} trailing"}) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error") << body;
  }
}

TEST(ServerApi, WrongTypesName400TheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "10"})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "kv_compression": "snapkv"})", "kv_compression"},
      {R"({"messages": [{"role": "user", "content": "x"}], "kv_compression": {"capacity": "big"}})", "kv_compression.capacity"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.what();
  }
  EXPECT_EQ(error_of(R"({"prompt": {"text": "x"}})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({"prompt": ["a", "b"]})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({"prompt": [1, -2]})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({"messages": []})", false).param, "prompt");
}

TEST(ServerApi, NegativeOrAbsurdParametersAre400) {
  const std::string head = R"({"messages": [{"role": "user", "content": "x"}], )";
  for (const char* tail : {R"("max_tokens": -1})", R"("max_tokens": 1e12})", R"("temperature": -0.1})",
                           R"("temperature": 1e9})", R"("top_p": 1.5})", R"("top_k": -3})", R"("n": 2})",
                           R"("timeout": 0})", R"("timeout": -5})", R"("presence_penalty": 1})",
                           R"("stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})"}) {
    const ApiError e = error_of(head + tail);
    EXPECT_EQ(e.status, 400) << tail;
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(ServerApi, AnyModelNameIsServedUnlessStrict) {
  const std::string body = R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})";
  EXPECT_EQ(parse_request(parse_json_body(body), true, defaults()).messages.size(), 1u);
  EXPECT_EQ(error_of(R"({"model": 4, "messages": [{"role": "user", "content": "x"}]})").param, "model");

  RequestDefaults strict = defaults();
  strict.strict_model = true;
  EXPECT_NO_THROW(parse_request(parse_json_body(R"({"model": "smol", "prompt": "x"})"), false, strict));
  try {
    parse_request(parse_json_body(body), true, strict);
    ADD_FAILURE() << "a strict server accepted model gpt-4";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 404);
    EXPECT_EQ(e.code, "model_not_found");
    EXPECT_NE(std::string(e.what()).find("smol"), std::string::npos) << e.what();
  }
}

// The speculation extension overlays the server's defaults; a draft model where the server has
// none, bad values and unknown fields are 400s naming the field.
TEST(ServerApi, SpeculationIsAPerRequestExtension) {
  const std::string head = R"({"messages": [{"role": "user", "content": "x"}], )";
  const ApiRequest r = parse_request(
      parse_json_body(head + R"("speculation": {"mode": "prompt-lookup", "k": 4, "ngram_max": 5, "ngram_min": 1}})"),
      true, defaults());
  EXPECT_EQ(r.params.speculation.mode, SpecMode::kPromptLookup);
  EXPECT_EQ(r.params.speculation.k, 4);
  EXPECT_EQ(r.params.speculation.ngram_max, 5);
  EXPECT_EQ(r.params.speculation.ngram_min, 1);
  EXPECT_EQ(parse_request(parse_json_body(head + R"("max_tokens": 1})"), true, defaults()).params.speculation.mode,
            SpecMode::kNone);
  RequestDefaults on = defaults();
  on.speculation.mode = SpecMode::kPromptLookup;
  on.speculation.k = 3;
  const ApiRequest d = parse_request(parse_json_body(head + R"("speculation": {"k": 2}})"), true, on);
  EXPECT_EQ(d.params.speculation.mode, SpecMode::kPromptLookup);
  EXPECT_EQ(d.params.speculation.k, 2);
  EXPECT_EQ(parse_request(parse_json_body(head + R"("speculation": {"mode": "none"}})"), true, on).params.speculation.mode,
            SpecMode::kNone);
  // With a press re-compressing during generation (passes stop short of each re-compression).
  const ApiRequest rc = parse_request(
      parse_json_body(head + R"("speculation": {"mode": "prompt-lookup"}, "kv_compression": {"press": "snapkv", "recompress": 64}})"),
      true, defaults());
  EXPECT_EQ(rc.params.speculation.mode, SpecMode::kPromptLookup);
  EXPECT_EQ(rc.press.recompress, 64);
  RequestDefaults with_draft = defaults();
  with_draft.draft_model = true;
  EXPECT_EQ(parse_request(parse_json_body(head + R"("speculation": {"mode": "draft", "k": 3}})"), true, with_draft)
                .params.speculation.mode,
            SpecMode::kDraft);
  const std::pair<const char*, const char*> bad[] = {
      {R"("speculation": "prompt-lookup"})", "speculation"},
      {R"("speculation": {"mode": "draft"}})", "speculation.mode"},
      {R"("speculation": {"mode": "medusa"}})", "speculation.mode"},
      {R"("speculation": {"mode": 1}})", "speculation.mode"},
      {R"("speculation": {"k": 0}})", "speculation.k"},
      {R"("speculation": {"k": 17}})", "speculation.k"},
      {R"("speculation": {"ngram_min": 4, "ngram_max": 3}})", "speculation.ngram_min"},
      {R"("speculation": {"tree": true}})", "speculation.tree"},
  };
  for (const auto& [body, param] : bad) {
    const ApiError e = error_of(head + body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.what();
  }
}

TEST(ServerApi, UnknownPressIs400) {

  const std::string head = R"({"messages": [{"role": "user", "content": "x"}], "kv_compression": )";
  for (const char* kv : {R"({"press": "nope"})", R"({"kernel": 4})", R"({"capacity": 16, "window": 32})",
                         R"({"pool": "median"})", R"({"capacity": 0})", R"({"ratio": 1.5})", R"({"colour": 1})"}) {
    const ApiError e = error_of(head + kv + "}");
    EXPECT_EQ(e.status, 400) << kv;
    EXPECT_EQ(e.param.rfind("kv_compression", 0), 0u) << kv << ": " << e.param;
  }
}

// Every press option of the table is a kv_compression field: its default is accepted with the
// option's JSON type, and a value of the wrong type is a 400 naming that field.
TEST(ServerApi, EveryPressOptionIsAKvCompressionField) {
  const std::string head = R"({"messages": [{"role": "user", "content": "x"}], "kv_compression": )";
  for (const PressParam& p : press_params()) {
    json kv = json::object();
    if (p.type == PressParam::Type::kChoice) {
      kv[p.name] = p.default_text;
    } else {
      kv[p.name] = json::parse(p.default_text);
    }
    if (p.name != "press") kv["press"] = "snapkv";
    const ApiRequest r = parse_request(parse_json_body(head + kv.dump() + "}"), true, defaults());
    EXPECT_EQ(p.text(r.press), p.default_text) << p.name;
    const ApiError e = error_of(head + json{{p.name, json::array()}}.dump() + "}");
    EXPECT_EQ(e.param, "kv_compression." + p.name);
    EXPECT_NE(std::string(e.what()).find("'kv_compression." + p.name + "'"), std::string::npos) << e.what();
  }
}

TEST(ServerApi, NumbersBeyondADoubleAre400NamingTheirField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 1e400})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1e400})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "user", "content": 1e999}]})", "messages[1].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", 1e400]})", "stop[1]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "kv_compression": {"capacity": 2e308}})", "kv_compression.capacity"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST(ServerApi, SamplingFieldsLeftOutTakeTheServersDefaultsAndEachRequestItsOwnSeed) {
  RequestDefaults d = defaults();
  d.sampling = SamplingParams{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  const auto parse = [&](const char* body) { return parse_request(parse_json_body(body), false, d).params.sampling; };
  const SamplingParams a = parse(R"({"prompt": "x"})"), b = parse(R"({"prompt": "x"})");
  EXPECT_FLOAT_EQ(a.temperature, 0.8f);
  EXPECT_EQ(a.top_k, 40);
  EXPECT_FLOAT_EQ(a.top_p, 0.95f);
  EXPECT_FLOAT_EQ(a.min_p, 0.05f);
  EXPECT_NE(a.seed, b.seed);  // a 64-bit draw each: equal with probability 2^-64
  const SamplingParams c = parse(R"({"prompt": "x", "temperature": 0, "top_k": 0, "seed": 9})");
  EXPECT_FLOAT_EQ(c.temperature, 0.f);
  EXPECT_EQ(c.top_k, 0);
  EXPECT_FLOAT_EQ(c.top_p, 0.95f);
  EXPECT_EQ(c.seed, 9u);
}

TEST(ServerApi, FieldsThatWouldChangeTheAnswerAreRefusedNotIgnored) {
  const std::string head = R"({"messages": [{"role": "user", "content": "x"}], )";
  for (const auto& [tail, param] : std::vector<std::pair<std::string, std::string>>{
           {R"("logprobs": true})", "logprobs"},
           {R"("top_logprobs": 3})", "top_logprobs"},
           {R"("tools": [{"type": "function", "function": {"name": "f"}}]})", "tools"},
           {R"("tool_choice": "required"})", "tool_choice"},
           {R"("functions": []})", "functions"},
           {R"("response_format": {"type": "json_object"}})", "response_format"}}) {
    const ApiError e = error_of(head + tail);
    EXPECT_EQ(e.status, 400) << tail;
    EXPECT_EQ(e.param, param) << tail;
    EXPECT_EQ(e.code, "unsupported_parameter") << tail;
  }
  // Inert values pass.
  parse_request(parse_json_body(head + R"("logprobs": false, "tools": [], "tool_choice": "none",
                                          "response_format": {"type": "text"}})"), true, defaults());
}

TEST(ServerApi, ToolCallsAndResultsRenderWhereTheTemplateHasAPlace) {
  const ApiRequest r = parse_request(parse_json_body(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "18 C"}]})"), true, defaults());
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "weather");
  const std::string chatml = render_chat(ChatTemplate{ChatTemplateKind::kChatML, std::nullopt}, r.messages);
  EXPECT_NE(chatml.find("<|im_start|>assistant\n<tool_call>\n{\"name\":\"weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call><|im_end|>"),
            std::string::npos) << chatml;
  EXPECT_NE(chatml.find("<|im_start|>tool\n18 C<|im_end|>"), std::string::npos) << chatml;
  const std::string llama3 = render_chat(ChatTemplate{ChatTemplateKind::kLlama3, std::nullopt}, r.messages);
  EXPECT_NE(llama3.find("{\"name\":\"weather\",\"parameters\":{\"city\":\"Paris\"}}"), std::string::npos) << llama3;
  EXPECT_NE(llama3.find("<|start_header_id|>ipython<|end_header_id|>\n\n18 C<|eot_id|>"), std::string::npos) << llama3;
  try {
    render_chat(ChatTemplate{ChatTemplateKind::kMistral, std::nullopt}, r.messages);
    ADD_FAILURE() << "Mistral rendered a tool call";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages[1].tool_calls");
  }
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": null}]})").param, "messages[0].content");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})").param, "messages[0].tool_calls");
}

TEST(ServerApi, ErrorBodyHasOpenAiShape) {
  const json body = error_body(ApiError(429, "server_busy", "", "queue_full", "busy"));
  EXPECT_EQ(body["error"]["message"], "busy");
  EXPECT_EQ(body["error"]["type"], "server_busy");
  EXPECT_TRUE(body["error"]["param"].is_null());
  EXPECT_EQ(body["error"]["code"], "queue_full");
}

TEST(ServerApi, StreamChunksFollowOpenAi) {
  const ResponseHead chat{"chatcmpl-1", true, "smol", 1};
  const json first = chunk_body(chat, "Hel", true, FinishReason::kNone);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hel");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = chunk_body(chat, "", false, FinishReason::kStop);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const ResponseHead text{"cmpl-2", false, "smol", 1};
  EXPECT_EQ(chunk_body(text, "lo", false, FinishReason::kNone)["choices"][0]["text"], "lo");
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // Generated text cut inside a UTF-8 character does not make the body unwritable.
  EXPECT_NE(dump_json(json{{"t", std::string("\xE2\x82")}}).find("\"t\""), std::string::npos);
}

}  // namespace
}  // namespace snapkv::server

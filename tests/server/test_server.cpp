// The real server (snapkv serve) driven by real clients over loopback: curl for the OpenAI
// endpoints and SSE, cpp-httplib's client for concurrency, disconnects and bad input. (The
// official openai Python client is tests/server/openai_client_test.py.)
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <future>
#include <thread>

#include "support/server_process.h"

namespace snapkv {
namespace {

using nlohmann::json;
using test::ServerProcess;
using namespace std::chrono_literals;

constexpr const char* kModelId = "SmolLM2-135M-Instruct.Q4_1";

// stdout of a shell command.
std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

std::string curl_post(int port, const std::string& path, const json& body) {
  const std::string file = fmt::format("{}/snapkv_curl_{}.json", ::testing::TempDir(), ::getpid());
  std::FILE* f = std::fopen(file.c_str(), "w");
  std::fputs(body.dump().c_str(), f);
  std::fclose(f);
  const std::string response = shell(fmt::format("curl -sN --max-time 120 -H 'Content-Type: application/json' "
                                                  "--data-binary @{} http://127.0.0.1:{}{}", file, port, path));
  std::remove(file.c_str());
  return response;
}

// The data: payloads of an SSE body, in order.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t end; (end = body.find("\n\n", at)) != std::string::npos; at = end + 2) {
    const std::string event = body.substr(at, end - at);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    else EXPECT_EQ(event.rfind(":", 0), 0u) << "neither data nor a comment: " << event;
  }
  EXPECT_EQ(at, body.size()) << "unterminated event: " << body.substr(at);
  return out;
}

double metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no metric " << name;
    return -1;
  }
  return std::stod(text.substr(at + name.size() + 2));
}

json chat_body(const std::string& question, int max_tokens) {
  return {{"model", kModelId}, {"messages", {{{"role", "user"}, {"content", question}}}}, {"max_tokens", max_tokens},
          {"temperature", 0}};
}

// A long text (~1,500 tokens) from the evaluation data's essays.
std::string essay_text() {
  const std::string dir = test::data_dir() + "/niah_paulgraham/PaulGrahamEssays";
  std::string text;
  for (const char* name : {"addiction.txt", "aord.txt"}) {
    std::ifstream in(dir + "/" + name);
    text += std::string(std::istreambuf_iterator<char>(in), {});
  }
  return text.substr(0, 7000);
}

TEST(Server, HealthModelsAndMetrics) {
  ServerProcess server("");
  auto c = server.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], kModelId);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("# TYPE snapkv_requests_total counter"), std::string::npos);
  EXPECT_NE(metrics->body.find("snapkv_requests_total{endpoint=\"/v1/models\",status=\"200\"} 1"), std::string::npos)
      << metrics->body;
  EXPECT_EQ(metric(metrics->body, "snapkv_queue_length"), 0);
  EXPECT_EQ(server.stop(), 0);
}

TEST(Server, ChatStreamedWithCurlEqualsTheWholeAnswer) {
  ServerProcess server("");
  json body = chat_body("What is the capital of France?", 12);
  body["model"] = "gpt-4o";  // one model served: any name is (--strict-model refuses it: BadInputGets4xx...)
  const json whole = json::parse(curl_post(server.port(), "/v1/chat/completions", body));
  const std::string answer = whole["choices"][0]["message"]["content"];
  EXPECT_FALSE(answer.empty());
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["model"], kModelId);
  const json& usage = whole["usage"];
  EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
  EXPECT_LE(usage["completion_tokens"].get<int>(), 12);

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const std::vector<std::string> events = sse_data(curl_post(server.port(), "/v1/chat/completions", body));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string streamed, finish;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    if (chunk["choices"].empty()) {  // the usage chunk, last before [DONE]
      EXPECT_EQ(i + 2, events.size());
      EXPECT_EQ(chunk["usage"]["completion_tokens"], usage["completion_tokens"]);
      continue;
    }
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const json& choice = chunk["choices"][0];
    if (i == 0) {
      EXPECT_EQ(choice["delta"]["role"], "assistant");
    }
    if (choice["delta"].contains("content")) streamed += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(streamed, answer);
  EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
  EXPECT_EQ(server.stop(), 0);
}

TEST(Server, CompletionsCompressPerRequest) {
  ServerProcess server("--ctx 4096");
  auto c = server.client();
  json body = {{"prompt", essay_text() + "\n\nIn one sentence, the essay says that"}, {"max_tokens", 8}, {"temperature", 0}};
  auto full = c.Post("/v1/completions", body.dump(), "application/json");
  body["kv_compression"] = {{"press", "snapkv"}, {"capacity", 128}, {"window", 16}};
  auto pressed = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(full && pressed);
  ASSERT_EQ(full->status, 200) << full->body;
  ASSERT_EQ(pressed->status, 200) << pressed->body;
  const json fu = json::parse(full->body)["usage"], pu = json::parse(pressed->body)["usage"];
  EXPECT_GT(fu["prompt_tokens"].get<int>(), 1000);
  EXPECT_EQ(fu["kv_bytes"], fu["kv_full_bytes"]);
  EXPECT_LT(pu["kv_bytes"].get<double>() * 5, pu["kv_full_bytes"].get<double>()) << pu.dump();
  EXPECT_EQ(json::parse(pressed->body)["object"], "text_completion");
  // Whole token runs: the server hands the model's token run flags to the press.
  body["kv_compression"]["runs"] = 16;
  auto runs = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->status, 200) << runs->body;
  EXPECT_EQ(json::parse(runs->body)["usage"]["kv_bytes"], pu["kv_bytes"]) << "the same capacity";
  EXPECT_EQ(server.stop(), 0);
}

// The greedy completions of the essay's first 3,000 characters followed by each question (at most
// max_tokens), posted one after another (each with `extra` fields added) or all at once, as the
// replies' JSON; each reply is expected to be a 200 (else null, and the test has failed: callers
// stop with ASSERT_FALSE(HasFailure())).
std::vector<json> essay_completions(const ServerProcess& server, const std::vector<std::string>& questions,
                                    int max_tokens, bool at_once, const json& extra = json::object()) {
  const std::string doc = essay_text().substr(0, 3000);
  const auto post = [&](const std::string& q) {
    json body = {{"prompt", doc + q}, {"max_tokens", max_tokens}, {"temperature", 0}};
    body.update(extra);
    return server.client().Post("/v1/completions", body.dump(), "application/json");
  };
  std::vector<std::future<httplib::Result>> pending;
  for (const std::string& q : questions) {
    pending.push_back(std::async(at_once ? std::launch::async : std::launch::deferred, post, q));
  }
  std::vector<json> replies;
  for (auto& p : pending) {
    const httplib::Result r = p.get();
    const bool ok = r && r->status == 200;
    EXPECT_TRUE(ok) << (r ? r->body : "no reply");
    replies.push_back(ok ? json::parse(r->body) : json());
  }
  return replies;
}

// serve --spec prompt-lookup: requests decode with speculation unless they turn it off, and
// several at once have their drafts verified in the same batched steps; greedy answers are the
// same either way, and usage reports the passes, drafts and accepted drafts. How many drafts a
// batched step takes depends on which requests share it (the free lanes of the weights' pass),
// so acceptance is asserted on a request served alone.
TEST(Server, SpeculationKeepsTheGreedyAnswersOfConcurrentRequests) {
  ServerProcess server("--ctx 4096 --spec prompt-lookup --spec-k 3 --spec-ngram-min 1");
  const std::vector<std::string> questions = {"\n\nQuote the essay's first sentence:", "\n\nRepeat the essay's title:",
                                              "\n\nIn one sentence, the essay says that"};
  const std::vector<json> plain =
      essay_completions(server, questions, 24, false, {{"speculation", {{"mode", "none"}}}});
  ASSERT_FALSE(HasFailure());
  for (const json& reply : plain) EXPECT_EQ(reply["usage"]["speculation"]["drafted"], 0);
  const std::vector<json> fast = essay_completions(server, questions, 24, true);
  ASSERT_FALSE(HasFailure());
  int drafted = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i]["choices"][0]["text"], plain[i]["choices"][0]["text"]) << questions[i];
    const json& spec = fast[i]["usage"]["speculation"];
    EXPECT_GT(spec["passes"].get<int>(), 0);
    drafted += spec["drafted"].get<int>();
    EXPECT_LE(spec["accepted"].get<int>(), spec["drafted"].get<int>());
  }
  EXPECT_GT(drafted, 0);
  // Alone, the quoting request drafts its whole quota each step and keeps drafts.
  const json alone = essay_completions(server, {questions[0]}, 24, false)[0];
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(alone["choices"][0]["text"], plain[0]["choices"][0]["text"]);
  EXPECT_GT(alone["usage"]["speculation"]["accepted"].get<int>(), 0) << alone["usage"].dump();
  // A draft model is served only where the server has one.
  const json draft = {{"prompt", essay_text().substr(0, 3000) + questions[0]}, {"max_tokens", 4},
                      {"speculation", {{"mode", "draft"}}}};
  auto refused = server.client().Post("/v1/completions", draft.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_EQ(json::parse(refused->body)["error"]["param"], "speculation.mode") << refused->body;
  EXPECT_EQ(server.stop(), 0);
}

// serve --draft-model: requests draft with it unless they say otherwise, each with its own session
// on it, verified in the batched steps beside the others'; greedy answers are those without
// speculation. The draft is the served model itself (no other GGUF of its vocabulary can be
// downloaded), so nearly every draft is kept.
TEST(Server, DraftModelKeepsTheGreedyAnswersOfConcurrentRequests) {
  ServerProcess server(fmt::format("--ctx 4096 --draft-model {} --spec-k 3", test::default_model_path()));
  const std::vector<std::string> questions = {"\n\nQuote the essay's first sentence:",
                                              "\n\nIn one sentence, the essay says that"};
  const std::vector<json> plain =
      essay_completions(server, questions, 16, false, {{"speculation", {{"mode", "none"}}}});
  const std::vector<json> fast = essay_completions(server, questions, 16, true);
  ASSERT_FALSE(HasFailure());
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i]["choices"][0]["text"], plain[i]["choices"][0]["text"]) << questions[i];
    const json& spec = fast[i]["usage"]["speculation"];
    EXPECT_GT(spec["drafted"].get<int>(), 0) << fast[i]["usage"].dump();
    EXPECT_GE(spec["accepted"].get<int>() * 10, spec["drafted"].get<int>() * 8) << fast[i]["usage"].dump();
  }
  EXPECT_EQ(server.stop(), 0);
}

TEST(Server, BadInputGets4xxWithAnOpenAiErrorAndTheServerLivesOn) {
  ServerProcess server("--ctx 512 --max-body 64KiB --strict-model");
  auto c = server.client();
  const std::string chat = "/v1/chat/completions";
  auto expect_error = [&](const httplib::Result& r, int status, const std::string& what) {
    ASSERT_TRUE(r) << what;
    EXPECT_EQ(r->status, status) << what << ": " << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << what << ": " << r->body;
    EXPECT_FALSE(e["error"]["message"].get<std::string>().empty()) << what;
    EXPECT_TRUE(e["error"]["type"].is_string()) << what;
  };
  expect_error(c.Post(chat, "{\"messages\": [", "application/json"), 400, "malformed JSON");
  expect_error(c.Post(chat, R"({"messages": "hi"})", "application/json"), 400, "wrong type");
  json body = chat_body("hi", 4);
  body["model"] = "gpt-4";
  expect_error(c.Post(chat, body.dump(), "application/json"), 404, "unknown model with --strict-model");
  body = chat_body("hi", 4);
  body["kv_compression"] = {{"press", "nope"}};
  expect_error(c.Post(chat, body.dump(), "application/json"), 400, "unknown press");
  expect_error(c.Post(chat, chat_body("hi", -1).dump(), "application/json"), 400, "negative max_tokens");
  body = chat_body("hi", 4);
  body["temperature"] = 1e30;
  expect_error(c.Post(chat, body.dump(), "application/json"), 400, "absurd temperature");
  auto too_long = c.Post(chat, chat_body(essay_text(), 4).dump(), "application/json");
  expect_error(too_long, 400, "prompt over the context");
  if (too_long) {
    EXPECT_EQ(json::parse(too_long->body)["error"]["code"], "context_length_exceeded");
  }
  expect_error(c.Post(chat, std::string(100 << 10, ' '), "application/json"), 413, "oversized body");
  expect_error(c.Get("/v1/nothing"), 404, "unknown route");
  auto get_chat = c.Get(chat);
  expect_error(get_chat, 405, "GET on a POST endpoint");
  if (get_chat) {
    EXPECT_EQ(get_chat->get_header_value("Allow"), "POST, OPTIONS");
  }
  expect_error(c.Post("/v1/models", "{}", "application/json"), 405, "POST on a GET endpoint");
  auto ok = c.Post(chat, chat_body("Say hi.", 4).dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_TRUE(server.alive());
  EXPECT_EQ(server.stop(), 0);
}

// n chat completions sent at once, each on its own connection; the replies in order.
std::vector<httplib::Result> concurrent_chats(ServerProcess& server, int n, const std::string& prompt, int max_tokens) {
  std::vector<std::future<httplib::Result>> pending;
  for (int i = 0; i < n; ++i) {
    pending.push_back(std::async(std::launch::async, [&] {
      return server.client().Post("/v1/chat/completions", chat_body(prompt, max_tokens).dump(), "application/json");
    }));
  }
  std::vector<httplib::Result> replies;
  for (auto& f : pending) replies.push_back(f.get());
  return replies;
}

TEST(Server, RequestsThatFitAtOnceAreNotQueued) {
  // --max-queue bounds the requests left waiting; with free slots and memory nothing waits.
  ServerProcess server("--max-batch 4 --max-queue 0");
  for (const httplib::Result& r : concurrent_chats(server, 4, "Say hi.", 8)) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_EQ(server.stop(), 0);
}

TEST(Server, AFullQueueGets429WithRetryAfter) {
  ServerProcess server("--max-batch 1 --max-queue 1");
  int ok = 0, busy = 0;
  for (const httplib::Result& r : concurrent_chats(server, 4, "Write a long story.", 60)) {
    ASSERT_TRUE(r);
    if (r->status == 200) {
      ++ok;
    } else {
      EXPECT_EQ(r->status, 429) << r->body;
      EXPECT_FALSE(r->get_header_value("Retry-After").empty());
      EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
      ++busy;
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(busy, 1);
  EXPECT_EQ(server.stop(), 0);
}

TEST(Server, AClientThatLeavesIsCancelledAndItsMemoryFreed) {
  ServerProcess server("");
  for (const bool stream : {true, false}) {
    json body = chat_body("Count from one to a thousand.", 4000);
    body["stream"] = stream;
    httplib::Client c = server.client(stream ? 120 : 1);  // the non-streaming client gives up after 1 s
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    int chunks = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
    c.send(req);  // returns when the client stops reading and closes the connection
    double running = -1;
    for (int i = 0; i < 100 && running != 0; ++i) {
      std::this_thread::sleep_for(100ms);
      running = metric(server.client().Get("/metrics")->body, "snapkv_running_sequences");
    }
    const std::string m = server.client().Get("/metrics")->body;
    EXPECT_EQ(running, 0) << (stream ? "streaming" : "non-streaming") << " request still running";
    EXPECT_EQ(metric(m, "snapkv_kv_bytes"), 0);
    EXPECT_EQ(metric(m, "snapkv_kv_reserved_bytes"), 0);
    EXPECT_LT(metric(m, "snapkv_generated_tokens_total"), 2 * 4000);
  }
  EXPECT_EQ(server.stop(), 0);
}

// A streamed completion of 4000 tokens (greedy counting goes on for half a minute) on its own
// thread; the constructor returns at the first bytes.
struct LongStream {
  std::string received;
  std::promise<void> streaming;
  std::thread client;

  explicit LongStream(ServerProcess& server) {
    const json body = {{"model", kModelId}, {"prompt", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"}, {"max_tokens", 4000},
                       {"temperature", 0}, {"stream", true}};
    client = std::thread([this, &server, body] {
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = body.dump();
      req.set_header("Content-Type", "application/json");
      bool first = true;
      req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        received.append(data, n);
        if (std::exchange(first, false)) streaming.set_value();
        return true;
      };
      server.client().send(req);
    });
    streaming.get_future().wait();
  }
  ~LongStream() {
    if (client.joinable()) client.join();
  }
  bool ends_with_done() const {
    const std::string done = "data: [DONE]\n\n";
    return received.size() >= done.size() && received.compare(received.size() - done.size(), done.size(), done) == 0;
  }
};

TEST(Server, SigtermLetsRunningRequestsFinishUntilTheShutdownTimeoutAndRefusesNewOnes) {
  ServerProcess server("--shutdown-timeout 3");
  LongStream stream(server);
  const auto t0 = std::chrono::steady_clock::now();
  server.signal(SIGTERM);
  std::this_thread::sleep_for(300ms);
  auto late = server.client().Post("/v1/chat/completions", chat_body("hi", 4).dump(), "application/json");
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 503) << late->body;
  EXPECT_EQ(late->get_header_value("Retry-After"), "5");
  EXPECT_EQ(server.wait(10), 0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(took, 1.5);  // the running request went on past the signal...
  EXPECT_LT(took, 4.0);  // ...and the process was gone by the timeout
  stream.client.join();
  EXPECT_NE(stream.received.find("\"finish_reason\":\"shutdown\""), std::string::npos) << stream.received.substr(0, 2000);
  EXPECT_TRUE(stream.ends_with_done()) << stream.received.substr(stream.received.size() > 300 ? stream.received.size() - 300 : 0);
}

TEST(Server, ASecondSignalExitsAtOnce) {
  ServerProcess server("--shutdown-timeout 60");
  LongStream stream(server);
  server.signal(SIGTERM);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(server.alive());  // the running request may go on
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(server.stop(SIGINT, 5), 1);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

}  // namespace
}  // namespace snapkv

// The scheduler's prompt cache and context store on the default model: a request that resumes
// from a finished request's state (in memory, or from a directory store by a new scheduler)
// streams transformers' greedy continuation (greedy_llamacpp.json,
// tools/reference/make_llamacpp_fixture.py) having prefilled only the rest of its prompt; a
// pressed state serves only the conversation's next turn; the cache stays within the KV budget;
// requests for one document that arrive together prefill it once (pressed ones admitted together
// too, each answering as its own pressed prefill would, also when sent a few ms apart to a busy
// server or queued for a batch slot); corrupt stored states are misses.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "snapkv/model.h"
#include "snapkv/scheduler.h"
#include "reference_model.h"
#include "support/temp_dir.h"
#include "util/utf8.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const Model& model() {
  static const Model m = Model::load(test::default_model_path(), {.threads = 2});
  return m;
}

struct Case {
  std::vector<int32_t> prompt, hf_ids;
};

// A fixture case whose transformers continuation has no near-tie (margins >= 0.09).
Case fixture_case(const std::string& name) {
  const json fx = test::load_fixture("greedy_llamacpp.json");
  for (const json& c : fx["cases"]) {
    if (c["name"] == name) return {c["prompt_ids"].get<std::vector<int32_t>>(), c["transformers_ids"].get<std::vector<int32_t>>()};
  }
  ADD_FAILURE() << "no fixture case " << name;
  return {};
}

std::string text_of(std::span<const int32_t> ids) {
  Utf8Stream utf8;
  std::string out;
  for (const int32_t id : ids) out += utf8.push(model().tokenizer().token_piece(id));
  return out + utf8.flush();
}

SequenceRequest greedy(std::vector<int32_t> prompt, int max_tokens, PressConfig press = {}) {
  SequenceRequest r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.params.stop_at_eog = false;
  r.press = std::move(press);
  return r;
}

struct Result {
  std::string text;
  Job::Update last;
};

// Reads a submitted job to its end, which should be its length.
Result finish(Job& job) {
  Result r;
  for (;;) {
    Job::Update u = job.next(1000ms);
    r.text += u.text;
    if (u.done) {
      r.last = std::move(u);
      EXPECT_EQ(r.last.reason, FinishReason::kLength) << r.last.error;
      return r;
    }
  }
}

Result run(Scheduler& s, SequenceRequest request) {
  Rejection rejected{};
  const std::shared_ptr<Job> job = s.submit(std::move(request), &rejected);
  EXPECT_TRUE(job) << rejected.message;
  return job ? finish(*job) : Result{};
}

// The metrics once the loop has counted everything that ended.
SchedulerMetrics settled(const Scheduler& s) {
  SchedulerMetrics m = s.metrics();
  for (int i = 0; i < 200 && m.running > 0; ++i, m = s.metrics()) std::this_thread::sleep_for(10ms);
  return m;
}

std::vector<int32_t> concat(std::span<const int32_t> a, std::span<const int32_t> b) {
  std::vector<int32_t> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

SchedulerOptions f32_options() {
  SchedulerOptions o;
  o.kv_type = KvType::kF32;
  return o;
}

TEST(PromptCache, ResumedRequestsStreamTransformersGreedyAnswers) {
  Scheduler s(model(), f32_options());
  for (const auto& [name, head] : {std::pair{"essay_passage_1000", 600}, std::pair{"essay_passage_500", 300}}) {
    const Case c = fixture_case(name);
    const std::string expected = text_of(c.hf_ids);
    const std::vector<int32_t> first(c.prompt.begin(), c.prompt.begin() + head);
    EXPECT_EQ(run(s, greedy(first, 1)).last.stats.n_cached, 0) << name;
    // The document's start is cached; only the rest goes through the model.
    const Result more = run(s, greedy(c.prompt, static_cast<int>(c.hf_ids.size())));
    EXPECT_GE(more.last.stats.n_cached, head) << name;
    EXPECT_EQ(more.text, expected) << name;
    // The same prompt again: all but its last token are cached (a copy of the longer state).
    const Result again = run(s, greedy(c.prompt, static_cast<int>(c.hf_ids.size())));
    EXPECT_EQ(again.last.stats.n_cached, static_cast<int>(c.prompt.size()) - 1) << name;
    EXPECT_EQ(again.text, expected) << name;
  }
  const SchedulerMetrics m = settled(s);
  EXPECT_EQ(m.cache_hits, 4);
  EXPECT_EQ(m.prefilled_tokens + m.cached_tokens, m.prompt_tokens);
  EXPECT_LE(m.prefilled_tokens, 600 + 400 + 1 + 300 + 200 + 1);
}

TEST(PromptCache, APressedStateServesOnlyTheConversationsNextTurn) {
  Scheduler s(model(), f32_options());
  const Case c = fixture_case("essay_passage_1000");
  PressConfig press;
  press.press = "snapkv";
  press.capacity = 128;
  press.window = 8;
  // One token: nothing generated goes into the cache, the state holds the prompt's tokens.
  const Result turn1 = run(s, greedy(c.prompt, 1, press));
  EXPECT_LT(turn1.last.stats.kv_bytes * 4, turn1.last.stats.kv_full_bytes);
  const std::vector<int32_t> question = model().tokenizer().encode("\nWhat is this passage about?", false);
  const Result turn2 = run(s, greedy(concat(c.prompt, question), 8, press));
  EXPECT_EQ(turn2.last.stats.n_cached, static_cast<int>(c.prompt.size()));
  EXPECT_EQ(turn2.last.stats.n_generated, 8);
  EXPECT_LT(turn2.last.stats.kv_bytes * 4, turn2.last.stats.kv_full_bytes) << "the next turn is pressed too";
  // A prompt that departs from the pressed tokens (or a shorter one) cannot use it: its other
  // prefixes are gone.
  std::vector<int32_t> edited = concat(c.prompt, question);
  edited[500] = edited[500] == 13 ? 14 : 13;
  EXPECT_EQ(run(s, greedy(edited, 2, press)).last.stats.n_cached, 0);
  const std::vector<int32_t> shorter(c.prompt.begin(), c.prompt.begin() + 700);
  EXPECT_EQ(run(s, greedy(shorter, 2, press)).last.stats.n_cached, 0);
  // Without a press the same requests resume from copies of the shared prefixes.
  EXPECT_EQ(run(s, greedy(concat(c.prompt, question), 2)).last.stats.n_cached, 0) << "no full-cache state yet";
  EXPECT_EQ(run(s, greedy(shorter, 2)).last.stats.n_cached, 699);
  EXPECT_EQ(run(s, greedy(edited, 2)).last.stats.n_cached, 500);
}

// A pressed state serves only requests pressed with the same options, every option of the
// table: here Ada-KV's alpha, which PressConfig::describe() does not show.
TEST(PromptCache, AStateServesOnlyRequestsWithTheSamePressOptions) {
  Scheduler s(model(), f32_options());
  const Case c = fixture_case("essay_passage_1000");
  PressConfig press;
  press.press = "ada_kv";
  press.capacity = 128;
  press.window = 8;
  run(s, greedy(c.prompt, 1, press));
  const std::vector<int32_t> next = concat(c.prompt, model().tokenizer().encode("\nWho wrote it?", false));
  PressConfig other = press;
  other.alpha = 0.5;
  EXPECT_EQ(run(s, greedy(next, 2, other)).last.stats.n_cached, 0);
  EXPECT_EQ(run(s, greedy(next, 2, press)).last.stats.n_cached, static_cast<int>(c.prompt.size()));
}

TEST(PromptCache, StaysWithinTheKvBudgetDroppingTheLeastRecentlyUsedFirst) {
  const Case c = fixture_case("essay_passage_1000");
  const std::vector<int32_t> a(c.prompt.begin(), c.prompt.begin() + 600);
  const std::vector<int32_t> b(c.prompt.rbegin(), c.prompt.rbegin() + 600);
  const std::vector<int32_t> d(c.prompt.begin() + 300, c.prompt.begin() + 900);
  SchedulerOptions o;
  {
    Scheduler probe(model(), o);
    run(probe, greedy(a, 2));
    o.kv_memory = settled(probe).cache_bytes * 3 / 2;  // room for one state, not two
    ASSERT_GE(o.kv_memory, probe.kv_bound_bytes(PressConfig{}, 600, 2));
  }
  Scheduler s(model(), o);
  auto check = [&](const std::vector<int32_t>& prompt, int cached) {
    EXPECT_EQ(run(s, greedy(prompt, 2)).last.stats.n_cached, cached);
    const SchedulerMetrics m = settled(s);
    EXPECT_LE(m.cache_bytes + m.kv_reserved, o.kv_memory);
    EXPECT_EQ(m.cache_entries, 1) << "room for one state";
  };
  check(a, 0);
  check(b, 0);  // a is evicted, for b's reservation or for b's state
  check(d, 0);
  check(d, 599);
  check(a, 0);
}

TEST(PromptCache, RequestsForOneDocumentArrivingTogetherPrefillItOnce) {
  Scheduler s(model(), SchedulerOptions{});
  const Case c = fixture_case("essay_passage_1000");
  std::vector<std::vector<int32_t>> prompts;
  for (const char* q : {"\nWho wrote this?", "\nSummarize it.", "\nWhat comes next?"}) {
    prompts.push_back(concat(c.prompt, model().tokenizer().encode(q, false)));
  }
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& prompt : prompts) {
    Rejection rejected{};
    jobs.push_back(s.submit(greedy(prompt, 4), &rejected));
    ASSERT_TRUE(jobs.back()) << rejected.message;
  }
  // The two later requests resume from the first one's state: all they share with it.
  int expected_cached = 0, total = 0;
  for (const auto& prompt : prompts) {
    total += static_cast<int>(prompt.size());
    if (&prompt == &prompts[0]) continue;
    expected_cached += static_cast<int>(std::mismatch(prompt.begin(), prompt.end(), prompts[0].begin()).first - prompt.begin());
  }
  EXPECT_GE(expected_cached, 2000);
  int cached = 0;
  for (const auto& job : jobs) cached += finish(*job).last.stats.n_cached;
  EXPECT_EQ(cached, expected_cached);
  EXPECT_EQ(settled(s).prefilled_tokens, total - expected_cached);
}

TEST(PromptCache, PressedRequestsForOneDocumentAdmittedTogetherPrefillItOnce) {
  const Case c = fixture_case("essay_passage_1000");
  PressConfig press;
  press.press = "snapkv";
  press.capacity = 128;
  std::vector<std::vector<int32_t>> prompts;
  for (const char* q : {"\nWho wrote this?", "\nSummarize it.", "\nWhat comes next?"}) {
    prompts.push_back(concat(c.prompt, model().tokenizer().encode(q, false)));
  }
  // Each answered alone, without the cache: one pressed prefill of its whole prompt.
  SchedulerOptions alone;
  alone.prompt_cache = false;
  Scheduler solo(model(), alone);
  std::vector<std::string> expected;
  for (const auto& prompt : prompts) expected.push_back(run(solo, greedy(prompt, 8, press)).text);
  const std::vector<int32_t> later = concat(c.prompt, model().tokenizer().encode("\nIs it true?", false));
  const std::string expected_later = run(solo, greedy(later, 8, press)).text;

  size_t doc = prompts[0].size();
  int total = 0;
  size_t pressed = 0;
  for (const auto& prompt : prompts) {
    doc = std::min(doc, static_cast<size_t>(std::mismatch(prompt.begin(), prompt.end(), prompts[0].begin()).first -
                                            prompt.begin()));
    total += static_cast<int>(prompt.size());
    pressed += solo.kv_bound_bytes(press, static_cast<int64_t>(prompt.size()), 8);
  }
  EXPECT_GE(doc, c.prompt.size());
  const size_t whole = solo.kv_bound_bytes(PressConfig{}, static_cast<int64_t>(doc), 0);
  const size_t per_token = solo.kv_bound_bytes(PressConfig{}, 1, 0);

  // The three admitted together into a budget of about `budget` bytes: a full-cache request
  // holding the whole budget keeps them queued, and is cancelled. Returns the tokens cached.
  const auto together = [&](size_t budget) {
    const std::vector<int32_t> hello(c.prompt.begin(), c.prompt.begin() + 8);
    SchedulerOptions o;
    o.kv_memory = solo.kv_bound_bytes(PressConfig{}, 8, static_cast<int64_t>(budget / per_token) - 8);
    Scheduler s(model(), o);
    Rejection rejected{};
    const std::shared_ptr<Job> blocker = s.submit(greedy(hello, static_cast<int>(budget / per_token) - 8), &rejected);
    EXPECT_TRUE(blocker) << rejected.message;
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& prompt : prompts) {
      jobs.push_back(s.submit(greedy(prompt, 8, press), &rejected));
      EXPECT_TRUE(jobs.back()) << rejected.message;
    }
    SchedulerMetrics before = s.metrics();
    for (int i = 0; i < 200 && before.running == 0; ++i, before = s.metrics()) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(before.running, 1);
    EXPECT_EQ(before.queued, 3);
    if (blocker) blocker->cancel();
    int cached = 0;
    for (size_t i = 0; i < jobs.size() && jobs[i]; ++i) {
      const Result r = finish(*jobs[i]);
      EXPECT_LT(r.last.stats.kv_bytes * 4, r.last.stats.kv_full_bytes) << "pressed";
      cached += r.last.stats.n_cached;
      EXPECT_EQ(r.text, expected[i]) << "request " << i << ": the answer of its own pressed prefill";
    }
    const SchedulerMetrics m = settled(s);
    EXPECT_EQ(m.prefilled_tokens, 8 + total - cached);
    EXPECT_EQ(m.kv_reserved, 0u) << "every reservation, extra ones included, is returned";
    if (cached > 0) {
      // A later question on the document resumes from the whole state while it stays cached.
      const Result r = run(s, greedy(later, 8, press));
      EXPECT_EQ(r.last.stats.n_cached, static_cast<int>(doc));
      EXPECT_EQ(r.text, expected_later);
    }
    return cached;
  };
  // With room for the document's whole state and copies of it, the first admitted prefills the
  // document (without its press) for the two others.
  EXPECT_EQ(together(pressed + 5 * whole), 2 * static_cast<int>(doc));
  // Without room for the whole state and its copy beside the pressed reservations, each prefills
  // on its own.
  EXPECT_EQ(together(pressed + whole), 0);

  // Sent `apart` apart to a server busy decoding: returns the tokens cached.
  const auto busy = [&](SchedulerOptions o, std::chrono::milliseconds apart) {
    Scheduler s(model(), o);
    Rejection rejected{};
    const std::shared_ptr<Job> decoding = s.submit(greedy({c.prompt.begin(), c.prompt.begin() + 8}, 2000), &rejected);
    EXPECT_TRUE(decoding) << rejected.message;
    for (int i = 0; i < 200 && s.metrics().generated_tokens == 0; ++i) std::this_thread::sleep_for(10ms);
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& prompt : prompts) {
      jobs.push_back(s.submit(greedy(prompt, 8, press), &rejected));
      EXPECT_TRUE(jobs.back()) << rejected.message;
      std::this_thread::sleep_for(apart);
    }
    int cached = 0;
    for (size_t i = 0; i < jobs.size() && jobs[i]; ++i) {
      const Result r = finish(*jobs[i]);
      cached += r.last.stats.n_cached;
      EXPECT_EQ(r.text, expected[i]) << "request " << i << " to a busy server: the answer of its own pressed prefill";
    }
    if (decoding) {
      EXPECT_FALSE(decoding->next(0ms).done) << "the server was busy all along";
      decoding->cancel();
    }
    return cached;
  };
  // Sent 20 ms apart, they are admitted in one step all the same: the first waits gather_s in the
  // queue for the others (without that wait it is admitted at the next step and prefills alone).
  SchedulerOptions gathering;
  gathering.gather_s = 0.5;
  EXPECT_EQ(busy(gathering, 20ms), 2 * static_cast<int>(doc));
  // With one batch slot free, the first admitted prefills the document for the two queued behind
  // it, which resume from its whole state when it ends.
  SchedulerOptions one_slot;
  one_slot.max_batch = 2;
  EXPECT_EQ(busy(one_slot, 0ms), 2 * static_cast<int>(doc));
}

TEST(ContextStore, ADirectoryServesANewSchedulerAndACorruptStateIsAMiss) {
  const test::TempDir dir("store");
  SchedulerOptions o = f32_options();
  o.context_store = dir.path.string();
  const Case c = fixture_case("essay_passage_1000");
  const std::string expected = text_of(c.hf_ids);
  {
    Scheduler s(model(), o);
    run(s, greedy(std::vector<int32_t>(c.prompt.begin(), c.prompt.begin() + 800), 1));
    run(s, greedy(std::vector<int32_t>(c.prompt.begin(), c.prompt.begin() + 100), 1));  // too short to store
  }  // the saves are finished
  {
    Scheduler s(model(), o);  // a restart: its own cache is empty
    const Result r = run(s, greedy(c.prompt, static_cast<int>(c.hf_ids.size())));
    EXPECT_EQ(r.last.stats.n_cached, 800);
    EXPECT_EQ(r.text, expected);
    EXPECT_EQ(settled(s).store_hits, 1);
  }
  // Every stored file cut short: a miss, and the answer is the same.
  int cut = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    if (!e.is_regular_file() || e.file_size() < 4096) continue;
    fs::resize_file(e.path(), e.file_size() / 2);
    ++cut;
  }
  EXPECT_EQ(cut, 2) << "the 800-token state and the 1000-token one saved after it";
  Scheduler s(model(), o);
  const Result r = run(s, greedy(c.prompt, static_cast<int>(c.hf_ids.size())));
  EXPECT_EQ(r.last.stats.n_cached, 0);
  EXPECT_EQ(r.text, expected);
  EXPECT_EQ(settled(s).store_hits, 0);
}

}  // namespace
}  // namespace snapkv

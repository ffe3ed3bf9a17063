#pragma once
// Continuous batching of many sequences on one model (what the server runs on): submit requests
// from any thread and read each one's text as it is generated. One loop thread owns the running
// sequences:
//   - admission: requests wait in a bounded FIFO queue until the KV memory they may need (their
//     compressed size with max_tokens) fits the budget beside the running ones;
//   - prefill runs a piece at a time in slices of a few tens of milliseconds, so a long prompt
//     does not stall the sequences that are decoding; prefilling sequences take turns, so
//     requests that arrive together decode together;
//   - each decode step samples one token for every decoding sequence and runs them through the
//     model together, so the weights are read once per step; a sequence with speculation
//     (prompt lookup or a draft model) puts its drafts in the same step, and keeps those its
//     sampler accepts.
// A sequence ends at max_tokens, an end-of-generation token, a stop string, the end of the
// context, its deadline or cancellation (a client that went away). Its state then stays in the
// prompt cache, inside the same KV budget, until the memory is needed (least recently used out
// first; a running sequence is never evicted): a later request that starts with its tokens (the
// conversation's next turn, the same document with another question) prefills only the rest. A
// request that shares a long prefix with one still prefilling waits for it rather than
// prefilling the same tokens twice; pressed requests for one document, admitted together or
// queued behind one another, prefill it once without their presses. With a context store, states are also saved there and found
// by other servers and after a restart.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snapkv/generate.h"
#include "snapkv/model.h"
#include "snapkv/press.h"
#include "snapkv/types.h"

namespace snapkv {

using Clock = std::chrono::steady_clock;

struct SchedulerOptions {
  size_t kv_memory = size_t{2} << 30;  // bytes of KV cache all running sequences may hold
  int max_batch = 8;                   // sequences running at once (prefilling or decoding)
  int max_queue = 16;                  // requests waiting for memory or a batch slot (0: none)
  int n_ctx = 0;                       // context per sequence (0: the model's)
  KvType kv_type = KvType::kF16;
  double prefill_slice_s = 0.05;       // prefill time between two decode steps
  // How long a pressed request with a long prompt (512 tokens or more) waits in the queue for the
  // requests sent with it, so that they are admitted in one step and can share its document's
  // prefill (engine/scheduler.cpp); requests behind it in the queue wait as long (FIFO).
  double gather_s = 0.01;
  // Keep finished sequences' states (inside kv_memory, least recently used out first) and resume
  // requests that start with their tokens from them; see engine/prompt_cache.h for the rules.
  bool prompt_cache = true;
  // Where states are also saved for other servers and restarts: "" (nowhere), a directory or
  // "redis://HOST:PORT"; a directory keeps at most context_store_bytes.
  std::string context_store;
  size_t context_store_bytes = size_t{20} << 30;

  std::string validate() const;
};

struct SequenceRequest {
  std::vector<int32_t> prompt;
  GenerateParams params;             // max_tokens, sampling, stop_at_eog, speculation
  std::vector<std::string> stop;     // stop strings (not part of the output)
  PressConfig press;
  std::optional<Clock::time_point> deadline;
};

// kCancelled: the client went away; kShutdown: the scheduler was stopped.
enum class FinishReason { kNone, kStop, kLength, kCancelled, kTimeout, kShutdown, kError };
const char* finish_reason_name(FinishReason r);

struct SequenceStats {
  int n_prompt = 0;
  int n_cached = 0;  // prompt tokens resumed from a cached state instead of prefilled
  int n_generated = 0;
  double queue_s = 0, prefill_s = 0, decode_s = 0;
  size_t kv_bytes = 0;       // held at the end (compressed)
  size_t kv_full_bytes = 0;  // the uncompressed cache for the same tokens
  size_t kv_reserved = 0;    // what admission set aside
  // Speculative decoding: verification passes, tokens drafted and drafts accepted.
  int n_passes = 0, n_drafted = 0, n_accepted = 0;
};

// A submitted request as its client sees it. Thread-safe.
class Job {
 public:
  struct Update {
    std::string text;    // new text since the last update
    bool started = false;  // admitted (prefill begun)
    bool done = false;
    FinishReason reason = FinishReason::kNone;
    std::string error;   // kError, or why a queued request never started (kTimeout, kShutdown)
    SequenceStats stats;
  };
  // Waits until there is something new (or the timeout passes) and takes it.
  Update next(std::chrono::milliseconds timeout);
  // The client is gone: the scheduler stops the sequence and frees its memory at its next step.
  void cancel() { cancelled_ = true; }
  // Calls fn after every change (new text, admission, the end), on the scheduler's thread and
  // without locks held, so that an event loop can take the news with next(0ms) instead of
  // blocking a thread in next(). Called once at once when there is news already.
  void on_update(std::function<void()> fn);

 private:
  friend class BatchScheduler;
  void emit(std::string_view text);
  void set_started();
  void finish(FinishReason reason, std::string error = {});
  void notify();

  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  bool started_ = false, done_ = false, reported_start_ = false;
  FinishReason reason_ = FinishReason::kNone;
  std::string error_;
  SequenceStats stats_;
  std::function<void()> on_update_;
};

// A request the scheduler refuses at once: the queue is full (retryable), the server is shutting
// down (retryable), or it can never fit (not).
struct Rejection {
  enum Kind { kQueueFull, kShuttingDown, kTooLarge } kind;
  std::string message;
};

struct SchedulerMetrics {
  int running = 0, queued = 0;
  size_t kv_bytes = 0, kv_full_bytes = 0, kv_reserved = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t prefilled_tokens = 0;                 // prompt tokens that went through the model
  int64_t cached_tokens = 0;                    // prompt tokens resumed from cached states
  int64_t cache_hits = 0, store_hits = 0;       // requests resumed (store_hits: from the context store)
  size_t cache_bytes = 0;                       // held by the prompt cache
  int cache_entries = 0;
  double prefill_s = 0, decode_s = 0;  // loop time spent in prefill pieces and in decode steps
  int64_t decode_steps = 0;
};

class BatchScheduler;

class Scheduler {
 public:
  // Starts the loop thread; the model's thread count runs each step. draft: a model of the same
  // vocabulary for requests that speculate with SpecMode::kDraft; each such request drafts with
  // its own session on it (the request's press, its cache within the request's reservation),
  // which prefills the prompt after the model does, in the same slices. Error(kInvalidArgument)
  // for invalid options or a draft model of another vocabulary.
  Scheduler(const Model& model, const SchedulerOptions& options, const Model* draft = nullptr);
  ~Scheduler();  // stop()

  // Queues a request, or returns why not (the job is then null). Throws Error for a request
  // that is invalid (bad press, sampling or speculation parameters, speculation with a draft
  // model where the scheduler has none or beside re-compression, empty prompt, prompt over the
  // context).
  std::shared_ptr<Job> submit(SequenceRequest request, Rejection* rejected);
  // Stops admitting: queued requests end with kShutdown at once, new ones are rejected
  // (kShuttingDown), running ones go on. Idempotent.
  void drain();
  // Stops admitting; queued and running requests end with kShutdown (running ones after their current step).
  // Idempotent.
  void stop();
  SchedulerMetrics metrics() const;
  int n_ctx() const;
  // KV bytes a request may hold at most (what admission reserves).
  size_t kv_bound_bytes(const PressConfig& press, int64_t n_prompt, int64_t n_generate) const;

 private:
  Model model_;                // kept alive while the loop runs
  std::optional<Model> draft_;  // the same
  std::unique_ptr<BatchScheduler> impl_;
};

}  // namespace snapkv

#pragma once
// The engine behind snapkv::Scheduler (snapkv/scheduler.h, which describes the policy): the loop
// thread, admission, prefill slices and batched decode steps over the engine's Sequences.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/generate.h"
#include "engine/prompt_cache.h"
#include "engine/sequence.h"
#include "engine/state_store.h"
#include "snapkv/scheduler.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

class BatchScheduler {
 public:
  // identity: the model's fingerprints and shapes, for the context store's files. draft: a model
  // of the same vocabulary for requests with SpecMode::kDraft (none: such requests are refused).
  BatchScheduler(const Decoder& model, const Tokenizer& tokenizer, int n_threads, const SchedulerOptions& options,
                 const ContextMeta& identity = {}, const Decoder* draft = nullptr);
  ~BatchScheduler();  // stop()

  // Queues a request, or returns why not (the sequence is then null). Throws Error for a request
  // that is invalid (bad press or sampling parameters, empty prompt, prompt over the context).
  std::shared_ptr<Job> submit(SequenceRequest request, Rejection* rejected);

  // Stops admitting; queued requests end as cancelled, running ones stop after their current
  // step (cancelled) ... then the loop thread exits. Idempotent.
  void drain();
  void stop();
  SchedulerMetrics metrics() const;
  int n_ctx() const { return n_ctx_; }
  // KV bytes a request may hold at most (what admission reserves, besides its draft model's
  // session's for a request that drafts with it).
  size_t kv_bound_bytes(const PressConfig& press, int64_t n_prompt, int64_t n_generate) const;

 private:
  size_t kv_bound_bytes(const ModelHparams& h, const PressConfig& press, int64_t n_prompt, int64_t n_generate) const;
  // The context of a draft model's session: the scheduler's, or the draft model's if shorter.
  int draft_ctx() const { return std::min(n_ctx_, draft_->hparams().n_ctx); }
  struct Running;
  struct Queued {
    SequenceRequest request;
    std::shared_ptr<Job> seq;
    size_t reserve;
    Clock::time_point since;
  };
  void loop();
  void admit(std::vector<std::unique_ptr<Running>>& running);
  void prefill_slice(std::vector<std::unique_ptr<Running>>& running);
  // r's prompt is in (and its draft model's): it decodes from the next step.
  void start_decoding(Running& r);
  // One batched forward step of every decoding sequence: its next token, with speculation also
  // drafts (batched_step: verified, the accepted ones emitted, the others rolled back).
  void decode_step(std::vector<std::unique_ptr<Running>>& running);
  // Emits id to r's client; kNone to go on, else why r ends (the caller ends it).
  FinishReason emit(Running& r, int32_t id);
  void end(Running& r, FinishReason reason, std::string error = {});
  // The prompt cache's key of a request: its press options and the KV type.
  std::string cache_key(const PressConfig& press) const;
  // Whether w should wait for a running sequence that is prefilling a long prefix of its prompt,
  // whose state it could then resume from; marks that sequence to leave a copy when it is done (a
  // sequence prefilling a shared document leaves one anyway).
  bool wait_for_shared_prefill(const Running& w, std::vector<std::unique_ptr<Running>>& running);
  // Whether a request with press can share a whole state of its document with others (the press
  // can press a saved cache).
  bool shares_document(const PressConfig& press) const;
  // How many of r's first tokens the other requests that could share a whole state start with
  // (admitted and waiting, or queued): the shortest of the shared prefixes worth a shared prefill
  // (0: none). mu_ not held.
  int shared_document(const Running& r, const std::vector<std::unique_ptr<Running>>& running) const;
  // Begins r's prefill, from the longest cached state of its prompt (the prompt cache's, else the
  // context store's, else for a pressed request a whole state of its first tokens) when there is
  // one; else, for a pressed request sharing its document with others admitted or queued with it,
  // a prefill of that document without the press first. kv_reserved includes r's reservation.
  void start_prefill(Running& r, size_t kv_reserved, const std::vector<std::unique_ptr<Running>>& running);
  // Begins the prefills of admitted sequences that need not wait (any more). mu_ not held.
  void start_waiting(std::vector<std::unique_ptr<Running>>& running);
  // Counts r's prompt tokens as prefilled or cached. mu_ held.
  void count_start(const Running& r);
  // When the queue's first request may be admitted: a pressed request with a long prompt, that
  // could share its document's prefill, gather_s after it arrived (for the requests sent with
  // it); any other at once. mu_ held, the queue not empty.
  Clock::time_point gathered() const;
  // Requests that would be left waiting for memory or a slot if one more, of `reserve` bytes,
  // joined the queue and the loop admitted what it can at once (FIFO). mu_ held.
  int n_waiting_with(size_t reserve) const;

  // A sequence's options for this press.
  SequenceOptions sequence_options(const PressConfig& press) const {
    return {opt_.kv_type, press, &press_inputs_};
  }

  const Decoder& model_;
  const Decoder* draft_;
  const Tokenizer& tokenizer_;
  PressInputs press_inputs_;  // press_inputs(tokenizer_)
  SchedulerOptions opt_;
  int n_ctx_;
  ThreadPool pool_;
  size_t prefill_turn_ = 0;  // round robin over prefilling sequences (loop thread only)
  PromptCache cache_;        // loop thread only
  std::unique_ptr<StateStore> store_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stopping_ = false, draining_ = false;
  SchedulerMetrics metrics_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace snapkv

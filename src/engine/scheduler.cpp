#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/sampler.h"
#include "engine/speculative.h"
#include "engine/stop_strings.h"
#include "kv/kv_bound.h"
#include "kv/press.h"
#include "kv/press_inputs.h"
#include "util/error.h"
#include "util/memory.h"
#include "snapkv/timer.h"
#include "util/utf8.h"

namespace snapkv {
namespace {

// The fewest prompt tokens worth resuming from a cached state (a copy of it is made), and the
// fewest shared with a running prefill worth waiting for it.
constexpr int kCacheMin = 32;
constexpr size_t kShareMin = 256;

size_t minus(size_t a, size_t b) { return a - std::min(a, b); }

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kShutdown: return "shutdown";
    case FinishReason::kError: return "error";
  }
  return "?";
}

std::string SchedulerOptions::validate() const {
  if (kv_memory == 0) return "the KV memory budget must be positive";
  if (max_batch < 1 || max_batch > 256) return "the batch size must be between 1 and 256";
  if (max_queue < 0 || max_queue > 4096) return "the queue length must be between 0 and 4096";
  if (n_ctx < 0) return "the context size must be positive";
  if (!(prefill_slice_s > 0)) return "the prefill slice must be positive";
  if (!(gather_s >= 0 && gather_s <= 10)) return "the gathering wait must be between 0 and 10 seconds";
  if (!context_store.empty() && !prompt_cache) return "a context store needs the prompt cache";
  if (!context_store.empty() && context_store_bytes == 0) return "the context store size must be positive";
  return {};
}

Job::Update Job::next(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return !text_.empty() || done_ || (started_ && !reported_start_); });
  Update u;
  u.text.swap(text_);
  u.started = started_;
  reported_start_ = started_;
  u.done = done_;
  u.reason = reason_;
  u.error = error_;
  u.stats = stats_;
  return u;
}

void Job::on_update(std::function<void()> fn) {
  bool news = false;
  {
    std::lock_guard lk(mu_);
    on_update_ = fn;
    news = !text_.empty() || done_ || (started_ && !reported_start_);
  }
  if (news && fn) fn();
}

void Job::notify() {
  std::function<void()> fn;
  {
    std::lock_guard lk(mu_);
    fn = on_update_;
  }
  cv_.notify_all();
  if (fn) fn();
}

void Job::emit(std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard lk(mu_);
    text_ += text;
  }
  notify();
}

void Job::set_started() {
  {
    std::lock_guard lk(mu_);
    started_ = true;
  }
  notify();
}

void Job::finish(FinishReason reason, std::string error) {
  {
    std::lock_guard lk(mu_);
    done_ = true;
    reason_ = reason;
    error_ = std::move(error);
  }
  notify();
}

// A sequence the loop thread is running.
struct BatchScheduler::Running {
  std::shared_ptr<Job> seq;
  SequenceRequest req;
  std::unique_ptr<Sequence> session;
  Sampler sampler;
  StopMatcher stops;
  Utf8Stream utf8;
  SequenceStats stats;
  Timer timer;  // of the current phase
  bool decoding = false, done = false;
  bool waiting = true;      // admitted, prefill not begun (it may wait for one sharing its prompt)
  bool share = false;       // a waiting sequence wants a copy of this one's state after its prefill
  bool store_hit = false;   // resumed from the context store
  // > 0: prefilling the prompt's first doc_len tokens without its press, for the pressed requests
  // admitted with it that share them; then its press goes on from that state.
  int doc_len = 0;
  size_t extra = 0;  // bytes reserved beyond stats.kv_reserved while its prefill holds a whole cache
  // Speculative decoding: with SpecMode::kDraft a session on the draft model, which prefills the
  // prompt after the model does (before drafter, which holds it); the drafter is made at the
  // first decode step.
  std::unique_ptr<Sequence> draft;
  std::unique_ptr<Drafter> drafter;
  int32_t next = -1;  // the token its last decode step sampled, to emit next

  Running(const Decoder& model, int n_ctx, ThreadPool& pool, const SequenceOptions& options, Queued& q)
      : seq(q.seq), req(std::move(q.request)),
        session(std::make_unique<Sequence>(model, n_ctx, pool, options)),
        sampler(req.params.sampling), stops(req.stop) {
    stats.n_prompt = static_cast<int>(req.prompt.size());
    stats.kv_reserved = q.reserve;
    stats.queue_s = std::chrono::duration<double>(Clock::now() - q.since).count();
  }
};

BatchScheduler::BatchScheduler(const Decoder& model, const Tokenizer& tokenizer, int n_threads,
                               const SchedulerOptions& options, const ContextMeta& identity, const Decoder* draft)
    : model_(model), draft_(draft), tokenizer_(tokenizer), press_inputs_(press_inputs(tokenizer)), opt_(options),
      n_ctx_(options.n_ctx > 0 ? options.n_ctx : model.hparams().n_ctx), pool_(n_threads) {
  if (const std::string err = opt_.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (n_ctx_ > model.hparams().n_ctx) {
    fail(ErrorKind::kInvalidArgument, "a context of {} tokens exceeds the {} the model was loaded for", n_ctx_,
         model.hparams().n_ctx);
  }
  if (!opt_.context_store.empty()) {
    store_ = std::make_unique<StateStore>(BlobStore::open(opt_.context_store, opt_.context_store_bytes), identity);
  }
  thread_ = std::thread([this] { loop(); });
}

BatchScheduler::~BatchScheduler() { stop(); }

void BatchScheduler::drain() {
  std::lock_guard lk(mu_);
  draining_ = true;
  for (Queued& q : queue_) q.seq->finish(FinishReason::kShutdown, "the server is shutting down");
  queue_.clear();
  metrics_.queued = 0;
}

void BatchScheduler::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t BatchScheduler::kv_bound_bytes(const PressConfig& press, int64_t n_prompt, int64_t n_generate) const {
  return kv_bound_bytes(model_.hparams(), press, n_prompt, n_generate);
}

size_t BatchScheduler::kv_bound_bytes(const ModelHparams& h, const PressConfig& press, int64_t n_prompt,
                                      int64_t n_generate) const {
  const int stored = press.compresses() && press.gqa == GqaReduce::kPerQueryHead ? h.n_head : h.n_head_kv;
  const size_t entry = 2 * static_cast<size_t>(h.head_dim) * kv_type_size(opt_.kv_type) + sizeof(int32_t);
  return static_cast<size_t>(kv_entries_bound(press, h.layer_window, n_prompt, n_generate)) * stored * entry;
}

std::shared_ptr<Job> BatchScheduler::submit(SequenceRequest request, Rejection* rejected) {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  if (n_prompt == 0) fail(ErrorKind::kInvalidArgument, "the prompt is empty");
  if (n_prompt >= n_ctx_) {
    fail(ErrorKind::kOutOfRange, "the prompt has {} tokens, but the context holds {} (prompt and answer)", n_prompt,
         n_ctx_);
  }
  if (const std::string err = request.params.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (const std::string err = request.press.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const bool drafts = request.params.speculation.mode == SpecMode::kDraft;
  if (drafts && !draft_) {
    fail(ErrorKind::kUnsupported, "speculation with a draft model: this server has none (serve --draft-model FILE)");
  }
  request.params.max_tokens = static_cast<int>(std::min<int64_t>(request.params.max_tokens, n_ctx_ - n_prompt));
  // With a draft model, its session's cache too (the same press and tokens; a bound at most).
  const size_t reserve =
      kv_bound_bytes(request.press, n_prompt, request.params.max_tokens) +
      (drafts ? kv_bound_bytes(draft_->hparams(), request.press, n_prompt, request.params.max_tokens) : 0);
  std::lock_guard lk(mu_);
  if (stopping_ || draining_) {
    *rejected = {Rejection::kShuttingDown, "the server is shutting down"};
    return nullptr;
  }
  if (reserve > opt_.kv_memory) {
    *rejected = {Rejection::kTooLarge,
                 fmt::format("the request may need {} bytes of KV cache, more than the server's budget of {} "
                             "(compress it, e.g. kv_compression.capacity, or ask for fewer tokens)",
                             reserve, opt_.kv_memory)};
    return nullptr;
  }
  const int waiting = n_waiting_with(reserve);
  if (waiting > opt_.max_queue) {
    *rejected = {Rejection::kQueueFull, fmt::format("{} requests are already waiting", waiting - 1)};
    return nullptr;
  }
  auto seq = std::make_shared<Job>();
  queue_.push_back({std::move(request), seq, reserve, Clock::now()});
  metrics_.queued = waiting;
  cv_.notify_all();
  return seq;
}

int BatchScheduler::n_waiting_with(size_t reserve) const {
  int slots = opt_.max_batch - metrics_.running;
  size_t memory = minus(opt_.kv_memory, metrics_.kv_reserved);
  int waiting = static_cast<int>(queue_.size()) + 1;
  auto admissible = [&](size_t need) {
    if (slots <= 0 || need > memory) return false;
    --slots;
    memory -= need;
    --waiting;
    return true;
  };
  for (const Queued& q : queue_) {
    if (!admissible(q.reserve)) return waiting;
  }
  admissible(reserve);
  return waiting;
}

SchedulerMetrics BatchScheduler::metrics() const {
  std::lock_guard lk(mu_);
  return metrics_;
}

std::string BatchScheduler::cache_key(const PressConfig& press) const {
  // Every option of the table (describe() leaves some out): two configurations that press a
  // prompt differently never share a state.
  std::string key;
  for (const PressParam& p : press_params()) key += p.name + "=" + p.text(press) + " ";
  return key + "kv=" + kv_type_name(opt_.kv_type);
}

bool BatchScheduler::shares_document(const PressConfig& press) const {
  return opt_.prompt_cache && press.compresses() && press.gqa != GqaReduce::kPerQueryHead &&
         !make_press(press)->needs().whole_prompt();
}

int BatchScheduler::shared_document(const Running& r, const std::vector<std::unique_ptr<Running>>& running) const {
  // The shortest of the long prefixes others share with r, so that all of them can follow: those
  // admitted with it, and those queued behind it (for a batch slot or memory), which resume from
  // the whole state it leaves in the cache when they are admitted.
  const std::span<const int32_t> prompt = r.req.prompt;
  const size_t worth = std::max<size_t>(kShareMin, prompt.size() / 2);
  size_t doc = 0;
  const auto consider = [&](std::span<const int32_t> other) {
    const size_t n = std::min({common_prefix(other, prompt), other.size() - 1, prompt.size() - 1});
    if (n >= worth && (doc == 0 || n < doc)) doc = n;
  };
  for (const auto& x : running) {
    if (x.get() != &r && !x->done && x->waiting && shares_document(x->req.press)) consider(x->req.prompt);
  }
  std::lock_guard lk(mu_);
  for (const Queued& q : queue_) {
    if (shares_document(q.request.press)) consider(q.request.prompt);
  }
  return static_cast<int>(doc);
}

bool BatchScheduler::wait_for_shared_prefill(const Running& w, std::vector<std::unique_ptr<Running>>& running) {
  if (!opt_.prompt_cache) return false;
  const std::span<const int32_t> prompt = w.req.prompt;
  if (w.req.press.compresses()) {
    if (!shares_document(w.req.press)) return false;
    return std::any_of(running.begin(), running.end(), [&](const auto& r) {
      return r.get() != &w && !r->done && r->doc_len > 0 && static_cast<size_t>(r->doc_len) < prompt.size() &&
             common_prefix(r->req.prompt, prompt) >= static_cast<size_t>(r->doc_len);
    });
  }
  const size_t worth = std::max<size_t>(kShareMin, prompt.size() / 2);
  const std::string key = cache_key(w.req.press);
  const size_t cached = static_cast<size_t>(cache_.peek(key, prompt));
  for (auto& r : running) {
    if (r.get() == &w || r->done || r->decoding || r->waiting || r->req.press.compresses() ||
        cache_key(r->req.press) != key) {
      continue;
    }
    const size_t shared = common_prefix(r->req.prompt, prompt);
    if (shared >= worth && shared > cached + kShareMin) {
      r->share = true;
      return true;
    }
  }
  return false;
}

void BatchScheduler::start_prefill(Running& r, size_t kv_reserved, const std::vector<std::unique_ptr<Running>>& running) {
  r.waiting = false;
  const std::span<const int32_t> prompt = r.req.prompt;
  if (opt_.prompt_cache) {
    const std::string key = cache_key(r.req.press);
    PromptCache::Hit hit = cache_.take(key, prompt, kCacheMin);
    if (!hit.seq && store_) {
      hit = store_->find(key, prompt, model_, n_ctx_, pool_, sequence_options(r.req.press));
      r.store_hit = hit.seq != nullptr;
    }
    // What r may hold while the others keep their reservations.
    const size_t room = minus(opt_.kv_memory, kv_reserved) + r.stats.kv_reserved;
    const bool shares = shares_document(r.req.press);
    if (!hit.seq && shares) {
      // A whole state of its document (left by a request admitted with it): pressed with r's own
      // tokens as one prefill of its prompt would press it.
      hit = cache_.copy_whole(cache_key(PressConfig{}), prompt, kShareMin, room);
      if (hit.seq) {
        r.extra = minus(hit.seq->held_bytes(), r.stats.kv_reserved);
        try {
          hit.seq = hit.seq->hand_to(r.req.press);
        } catch (const Error&) {  // its press wants a wider window than the state holds
          hit = {};
          r.extra = 0;
        }
      }
    }
    if (hit.seq) {
      r.session = std::move(hit.seq);
      r.stats.n_cached = hit.n_cached;
    } else if (const int doc = shares ? shared_document(r, running) : 0;
               doc > 0 && 2 * kv_bound_bytes(PressConfig{}, doc, 0) <= room) {
      // Pressed requests admitted with it share its first doc tokens: they go in once, without a
      // press (and with r's window), for all of them (room for that state and one copy).
      r.doc_len = doc;
      r.extra = minus(kv_bound_bytes(PressConfig{}, doc, 0), r.stats.kv_reserved);
      PressConfig whole;
      whole.window = r.req.press.window;
      r.session = std::make_unique<Sequence>(model_, n_ctx_, pool_, sequence_options(whole));
    }
    // The cache gives up what the sequence may need (after the lookup, which may move or copy an
    // entry into the sequence's own reservation).
    cache_.evict_to(minus(opt_.kv_memory, kv_reserved + r.extra));
  }
  r.timer.reset();
  r.session->begin_prefill(r.doc_len > 0 ? prompt.first(static_cast<size_t>(r.doc_len))
                                         : prompt.subspan(static_cast<size_t>(r.stats.n_cached)));
}

void BatchScheduler::count_start(const Running& r) {
  metrics_.kv_reserved += r.extra;
  metrics_.prefilled_tokens += r.stats.n_prompt - r.stats.n_cached;
  metrics_.cached_tokens += r.stats.n_cached;
  metrics_.cache_hits += r.stats.n_cached > 0;
  metrics_.store_hits += r.store_hit;
}

void BatchScheduler::end(Running& r, FinishReason reason, std::string error) {
  const std::string rest = r.utf8.flush();
  r.seq->emit(r.stops.push(rest));
  r.seq->emit(r.stops.flush());
  (r.decoding ? r.stats.decode_s : r.stats.prefill_s) = r.timer.seconds();
  r.stats.kv_bytes = r.session->kv().bytes();
  r.stats.kv_full_bytes = r.session->kv_full_bytes();
  {
    std::lock_guard lk(r.seq->mu_);
    r.seq->stats_ = r.stats;
  }
  r.seq->finish(reason, std::move(error));
  r.done = true;
  // A state that is whole (not cut by an error in a prefill) stays for the requests after it; the
  // loop evicts what the budget cannot hold once this sequence's reservation is returned.
  if (opt_.prompt_cache && reason != FinishReason::kError && !r.session->prefilling() && r.session->n_past() > 0) {
    const std::string key = cache_key(r.req.press);
    if (store_) store_->save(key, *r.session);
    cache_.put(key, std::move(r.session));
  }
  r.session.reset();
}

Clock::time_point BatchScheduler::gathered() const {
  const Queued& q = queue_.front();
  if (q.request.prompt.size() < 2 * kShareMin || !shares_document(q.request.press)) return q.since;
  return q.since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.gather_s));
}

void BatchScheduler::admit(std::vector<std::unique_ptr<Running>>& running) {
  std::lock_guard lk(mu_);
  // Queued requests whose client left or whose deadline passed end before they start.
  const Clock::time_point now = Clock::now();
  std::erase_if(queue_, [&](Queued& q) {
    if (q.seq->cancelled_) {
      q.seq->finish(FinishReason::kCancelled, "cancelled while waiting");
    } else if (q.request.deadline && now >= *q.request.deadline) {
      q.seq->finish(FinishReason::kTimeout, "timed out waiting for KV memory or a batch slot");
    } else {
      return false;
    }
    return true;
  });
  // FIFO: the first request waits for memory rather than being overtaken by smaller ones, and
  // for the requests sent with it (those behind it then come in the same step).
  const bool gathering = !queue_.empty() && now < gathered();
  while (!queue_.empty() && static_cast<int>(running.size()) < opt_.max_batch && !stopping_ && !gathering) {
    Queued& q = queue_.front();
    if (metrics_.kv_reserved + q.reserve > opt_.kv_memory) break;
    // Its prefill begins in prefill_slice(), outside the lock (a context store may be asked).
    std::unique_ptr<Running> r;
    try {
      r = std::make_unique<Running>(model_, n_ctx_, pool_, sequence_options(q.request.press), q);
    } catch (const std::exception& e) {
      q.seq->finish(FinishReason::kError, e.what());
      queue_.pop_front();
      continue;
    }
    queue_.pop_front();
    r->seq->set_started();
    metrics_.kv_reserved += r->stats.kv_reserved;
    metrics_.prompt_tokens += r->stats.n_prompt;
    running.push_back(std::move(r));
  }
  metrics_.queued = static_cast<int>(queue_.size());
  metrics_.running = static_cast<int>(running.size());
}

void BatchScheduler::prefill_slice(std::vector<std::unique_ptr<Running>>& running) {
  // Round robin, one piece per prefilling sequence in turn (the turn carries over to the next
  // slice): requests that arrive together end their prefills together and then decode in one
  // batch, where first come, first served would decode them one after another.
  Timer slice;
  std::vector<Running*> prefilling;
  // Newly admitted sequences begin, and so do those waiting for a prefill that just ended (before
  // the loop may evict the copy it left for them).
  start_waiting(running);
  for (;;) {
    prefilling.clear();
    for (auto& r : running) {
      if (!r->done && !r->decoding && !r->waiting) prefilling.push_back(r.get());
    }
    if (prefilling.empty()) break;
    Running& r = *prefilling[prefill_turn_++ % prefilling.size()];
    bool ended = false;
    try {
      if (r.draft) {
        // The model has read the prompt and its draft model reads it now, piece by piece as well.
        if (r.draft->prefill_step()) start_decoding(r);
      } else if (!r.session->prefill_step()) {
        // more to come
      } else if (r.doc_len > 0) {
        // The shared document is in: a copy for the requests waiting for it, and r goes on with its
        // press and the rest of its prompt.
        cache_.put(cache_key(PressConfig{}), r.session->prefix_copy(r.session->n_past()));
        r.session = r.session->hand_to(r.req.press);
        r.session->begin_prefill(std::span(r.req.prompt).subspan(static_cast<size_t>(r.doc_len)));
        r.doc_len = 0;
        ended = true;
      } else {
        ended = true;
        if (r.req.params.speculation.mode == SpecMode::kDraft) {
          r.draft = std::make_unique<Sequence>(*draft_, draft_ctx(), pool_, sequence_options(r.req.press));
        }
        // A prompt over the draft model's context gets no drafts (ModelDrafter), so no prefill.
        if (r.draft && r.req.prompt.size() <= static_cast<size_t>(r.draft->n_ctx())) {
          r.draft->begin_prefill(r.req.prompt);
        } else {
          start_decoding(r);
        }
        if (r.share) {
          // A copy for the sequences waiting for it (the loop keeps the cache within the budget).
          cache_.put(cache_key(r.req.press), r.session->prefix_copy(r.session->n_past()));
          r.share = false;
        }
        std::lock_guard lk(mu_);
        metrics_.kv_reserved -= std::exchange(r.extra, 0);
      }
    } catch (const std::exception& e) {
      end(r, FinishReason::kError, e.what());
      ended = true;
    }
    if (ended) start_waiting(running);
    if (slice.seconds() >= opt_.prefill_slice_s) break;
  }
  std::lock_guard lk(mu_);
  metrics_.prefill_s += slice.seconds();
}

void BatchScheduler::start_decoding(Running& r) {
  r.stats.prefill_s = r.timer.seconds();
  r.timer.reset();
  r.decoding = true;
}

void BatchScheduler::start_waiting(std::vector<std::unique_ptr<Running>>& running) {
  for (auto& r : running) {
    if (r->done || !r->waiting || wait_for_shared_prefill(*r, running)) continue;
    size_t reserved;
    {
      std::lock_guard lk(mu_);
      reserved = metrics_.kv_reserved;
    }
    try {
      start_prefill(*r, reserved, running);
    } catch (const std::exception& e) {
      end(*r, FinishReason::kError, e.what());
      continue;
    }
    std::lock_guard lk(mu_);
    count_start(*r);
  }
}

FinishReason BatchScheduler::emit(Running& r, int32_t id) {
  if (r.req.params.stop_at_eog && tokenizer_.is_eog(id)) return FinishReason::kStop;
  ++r.stats.n_generated;
  r.seq->emit(r.stops.push(r.utf8.push(tokenizer_.token_piece(id))));
  if (r.stops.stopped()) return FinishReason::kStop;
  return r.stats.n_generated >= r.req.params.max_tokens ? FinishReason::kLength : FinishReason::kNone;
}

void BatchScheduler::decode_step(std::vector<std::unique_ptr<Running>>& running) {
  int64_t generated = 0;
  for (const auto& r : running) generated -= r->stats.n_generated;
  std::vector<Running*> members;
  std::vector<StepRow> rows;
  for (auto& rp : running) {
    Running& r = *rp;
    if (r.done || !r.decoding) continue;
    if (r.stats.n_generated >= r.req.params.max_tokens) {
      end(r, FinishReason::kLength);
      continue;
    }
    // The token the last step sampled (after the prefill: one from its logits).
    const int32_t id = r.next >= 0 ? std::exchange(r.next, -1) : r.sampler.sample(r.session->logits(), r.session->tokens());
    FinishReason why = emit(r, id);
    if (why == FinishReason::kNone && r.session->n_past() >= r.session->n_ctx()) why = FinishReason::kLength;
    if (why != FinishReason::kNone) {
      end(r, why);
      continue;
    }
    const SpeculationParams& spec = r.req.params.speculation;
    if (spec.mode != SpecMode::kNone && !r.drafter) r.drafter = make_drafter(spec, *r.session, r.draft.get());
    members.push_back(&r);
    rows.push_back({r.session.get(), &r.sampler, r.drafter.get(), id,
                    draft_room(*r.session, spec.k, r.req.params.max_tokens - r.stats.n_generated), {}, nullptr});
  }
  std::vector<GenerateStats> st(members.size());
  std::vector<FinishReason> ends(members.size(), FinishReason::kNone);
  for (size_t b = 0; b < members.size(); ++b) {
    rows[b].st = &st[b];
    rows[b].emit = [&, b](int32_t t) {
      ends[b] = emit(*members[b], t);
      return ends[b] == FinishReason::kNone;
    };
  }
  Timer t;
  const std::vector<int32_t> next = batched_step(rows);
  const double step_s = t.seconds();
  for (size_t b = 0; b < members.size(); ++b) {
    Running& r = *members[b];
    r.stats.n_passes += st[b].n_passes;
    r.stats.n_drafted += st[b].n_drafted;
    r.stats.n_accepted += st[b].n_accepted;
    r.next = next[b];
    if (r.next < 0) end(r, ends[b]);  // at an accepted draft
  }
  for (const auto& r : running) generated += r->stats.n_generated;
  std::lock_guard lk(mu_);
  metrics_.generated_tokens += generated;
  if (!members.empty()) {
    metrics_.decode_s += step_s;
    ++metrics_.decode_steps;
  }
}

void BatchScheduler::loop() {
  std::vector<std::unique_ptr<Running>> running;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !running.empty() || !queue_.empty(); });
      if (running.empty() && !queue_.empty()) cv_.wait_until(lk, gathered(), [&] { return stopping_; });
      if (stopping_) break;
    }
    const Clock::time_point now = Clock::now();
    for (auto& r : running) {
      if (r->seq->cancelled_) {
        end(*r, FinishReason::kCancelled);
      } else if (r->req.deadline && now >= *r->req.deadline) {
        end(*r, FinishReason::kTimeout);
      }
    }
    try {
      admit(running);
      prefill_slice(running);
      decode_step(running);
    } catch (const std::exception& e) {
      // An engine failure ends the sequences it may have touched, not the server.
      for (auto& r : running) {
        if (!r->done) end(*r, FinishReason::kError, e.what());
      }
    }
    std::unique_lock lk(mu_);
    for (auto& r : running) {
      if (r->done) metrics_.kv_reserved -= r->stats.kv_reserved + r->extra;
    }
    cache_.evict_to(minus(opt_.kv_memory, metrics_.kv_reserved));
    metrics_.cache_bytes = cache_.bytes();
    metrics_.cache_entries = static_cast<int>(cache_.size());
    if (std::erase_if(running, [](const auto& r) { return r->done; }) > 0) {
      lk.unlock();
      release_free_memory();  // the finished sequences' caches: RSS stays flat under load
      lk.lock();
    }
    metrics_.running = static_cast<int>(running.size());
    metrics_.kv_bytes = metrics_.kv_full_bytes = 0;
    for (const auto& r : running) {
      metrics_.kv_bytes += r->session->kv().bytes();
      metrics_.kv_full_bytes += r->session->kv_full_bytes();
    }
  }
  // Shutting down: whatever is queued or running ends now, with the text it has.
  std::lock_guard lk(mu_);
  for (Queued& q : queue_) q.seq->finish(FinishReason::kShutdown, "the server is shutting down");
  queue_.clear();
  for (auto& r : running) {
    if (!r->done) end(*r, FinishReason::kShutdown, "the server is shutting down");
  }
  metrics_ = {};
}

}  // namespace snapkv

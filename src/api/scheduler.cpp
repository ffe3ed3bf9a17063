#include "snapkv/scheduler.h"

#include "api/impl.h"
#include "engine/scheduler.h"
#include "util/error.h"

namespace snapkv {

namespace {

const Decoder* checked_draft(const Model& model, const std::optional<Model>& draft) {
  if (!draft) return nullptr;
  if (draft->impl().tokenizer_fingerprint != model.impl().tokenizer_fingerprint) {
    fail(ErrorKind::kInvalidArgument, "the draft model {} does not use the vocabulary of {}", draft->info().name,
         model.info().name);
  }
  return draft->impl().decoder.get();
}

}  // namespace

Scheduler::Scheduler(const Model& model, const SchedulerOptions& options, const Model* draft)
    : model_(model),
      draft_(draft ? std::optional<Model>(*draft) : std::nullopt),
      impl_(std::make_unique<BatchScheduler>(*model.impl().decoder, model.tokenizer(), model.options().threads,
                                             options, context_identity(model), checked_draft(model, draft_))) {}

Scheduler::~Scheduler() = default;

std::shared_ptr<Job> Scheduler::submit(SequenceRequest request, Rejection* rejected) {
  return impl_->submit(std::move(request), rejected);
}
void Scheduler::stop() { impl_->stop(); }
void Scheduler::drain() { impl_->drain(); }
SchedulerMetrics Scheduler::metrics() const { return impl_->metrics(); }
int Scheduler::n_ctx() const { return impl_->n_ctx(); }
size_t Scheduler::kv_bound_bytes(const PressConfig& press, int64_t n_prompt, int64_t n_generate) const {
  return impl_->kv_bound_bytes(press, n_prompt, n_generate);
}

}  // namespace snapkv

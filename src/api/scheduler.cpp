#include "snapkv/scheduler.h"

#include "api/impl.h"
#include "engine/scheduler.h"

namespace snapkv {

Scheduler::Scheduler(const Model& model, const SchedulerOptions& options)
    : model_(model),
      impl_(std::make_unique<BatchScheduler>(*model.impl().decoder, model.tokenizer(), model.options().threads,
                                             options, context_identity(model))) {}

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

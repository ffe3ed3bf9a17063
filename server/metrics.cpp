#include "server/metrics.h"

#include <fmt/format.h>

#include <iterator>

namespace snapkv::server {

void ServerMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lk(mu_);
  ++requests_[{endpoint, status}];
}

std::string ServerMetrics::prometheus(const SchedulerMetrics& s, size_t kv_budget, int max_batch) const {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  out += "# HELP snapkv_requests_total HTTP requests by endpoint and status.\n# TYPE snapkv_requests_total counter\n";
  {
    std::lock_guard lk(mu_);
    for (const auto& [key, n] : requests_) {
      fmt::format_to(std::back_inserter(out), "snapkv_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first,
                     key.second, n);
    }
  }
  metric("snapkv_prompt_tokens_total", "counter", "Prompt tokens admitted.", s.prompt_tokens);
  metric("snapkv_prompt_tokens_prefilled_total", "counter", "Prompt tokens that went through the model.",
         s.prefilled_tokens);
  metric("snapkv_prompt_tokens_cached_total", "counter", "Prompt tokens resumed from cached states.", s.cached_tokens);
  metric("snapkv_prompt_cache_hits_total", "counter", "Requests resumed from a cached state.", s.cache_hits);
  metric("snapkv_context_store_hits_total", "counter", "Requests resumed from a state found in the context store.",
         s.store_hits);
  metric("snapkv_prompt_cache_bytes", "gauge", "Bytes held by the cached states of finished sequences (KV cache, window queries, logits).", s.cache_bytes);
  metric("snapkv_prompt_cache_entries", "gauge", "Cached states held.", s.cache_entries);
  metric("snapkv_generated_tokens_total", "counter", "Tokens generated.", s.generated_tokens);
  metric("snapkv_prefill_seconds_total", "counter", "Time the engine spent in prefill.", s.prefill_s);
  metric("snapkv_decode_seconds_total", "counter", "Time the engine spent in batched decode steps.", s.decode_s);
  metric("snapkv_decode_steps_total", "counter", "Batched decode steps.", s.decode_steps);
  metric("snapkv_prefill_tokens_per_second", "gauge", "Prompt tokens per second of prefill time, since start.",
         s.prefill_s > 0 ? static_cast<double>(s.prompt_tokens) / s.prefill_s : 0.0);
  metric("snapkv_decode_tokens_per_second", "gauge", "Generated tokens per second of decode time, since start.",
         s.decode_s > 0 ? static_cast<double>(s.generated_tokens) / s.decode_s : 0.0);
  metric("snapkv_kv_bytes", "gauge", "KV cache bytes held by running sequences.", s.kv_bytes);
  metric("snapkv_kv_full_bytes", "gauge", "KV cache bytes the same sequences would hold uncompressed.", s.kv_full_bytes);
  metric("snapkv_kv_saved_bytes", "gauge", "KV cache bytes saved by compression.",
         s.kv_full_bytes > s.kv_bytes ? s.kv_full_bytes - s.kv_bytes : 0);
  metric("snapkv_kv_reserved_bytes", "gauge", "KV cache bytes reserved by admission (upper bounds).", s.kv_reserved);
  metric("snapkv_kv_budget_bytes", "gauge", "The KV memory budget (--kv-memory).", kv_budget);
  metric("snapkv_running_sequences", "gauge", "Sequences prefilling or decoding.", s.running);
  metric("snapkv_max_batch", "gauge", "Most sequences running at once (--max-batch).", max_batch);
  metric("snapkv_queue_length", "gauge", "Requests waiting for memory or a batch slot.", s.queued);
  return out;
}

}  // namespace snapkv::server

#pragma once
// The server's /metrics in Prometheus text format: requests by endpoint and status, tokens,
// prefill and decode throughput, KV memory in use, saved by compression and reserved, queue.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "snapkv/scheduler.h"

namespace snapkv::server {

class ServerMetrics {
 public:
  void count_request(const std::string& endpoint, int status);
  std::string prometheus(const SchedulerMetrics& s, size_t kv_budget, int max_batch) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
};

}  // namespace snapkv::server

#pragma once
// One admitted completion written to its connection as the scheduler produces it, without a
// thread of its own: the job's updates are posted to the connection's strand.
//   stream: the 200 head and SSE chunks at once (": keep-alive" comments while the request waits
//           in the queue or between tokens), a closing chunk with the finish reason, usage when
//           asked, then "data: [DONE]";
//   whole:  nothing until the request is admitted (so a queue timeout can still be a 503), then
//           the 200 head and, while it generates, a space every keep_alive_s (JSON allows it),
//           then the completion object.
// A client that goes away cancels the job.
#include <functional>
#include <memory>

#include "server/api_response.h"
#include "server/connection.h"
#include "snapkv/scheduler.h"

namespace snapkv::server {

struct CompletionParams {
  ResponseHead head;
  bool stream = false;
  bool include_usage = false;
  double keep_alive_s = 0.5;
};

// Starts writing `job` to `conn`; on_end(status) is called once, when the last byte is queued.
void start_completion_stream(const std::shared_ptr<Connection>& conn, std::shared_ptr<Job> job,
                             const CompletionParams& params, std::function<void(int status)> on_end);

}  // namespace snapkv::server

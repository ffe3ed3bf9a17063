// snapkv bench phase: this moment's memory read bandwidth and the pool threads' cache-line round
// trip, on one line. The VMs here switch between phases, seconds to minutes long, that move a
// decode run by tens of per cent (the Zen 4 VM: ~31 GB/s with ~56 ns, ~55 GB/s with ~330 ns), so
// an alternating comparison of two builds (tools/perf/ab_decode.py) classes each pair by the reading
// taken just before it.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include "commands.h"
#include "ops/peak.h"
#include "util/aligned_vector.h"
#include "util/error.h"
#include "util/round_trip.h"
#include "util/thread_pool.h"

namespace snapkv::cli {
namespace {

struct PhaseOptions {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double bandwidth_mib = 256;
};

int bench_phase(const PhaseOptions& o) {
  if (o.threads < 1) fail(ErrorKind::kInvalidArgument, "-t must be >= 1");
  if (!(o.bandwidth_mib >= 64)) fail(ErrorKind::kInvalidArgument, "--bandwidth-mib must be at least 64");
  ThreadPool pool(o.threads);
  const AlignedVector<float> buffer(static_cast<size_t>(o.bandwidth_mib * (1 << 20)) / sizeof(float));
  read_bandwidth(pool, buffer, 1);  // the first pass also wakes the threads; not counted
  const double bandwidth = read_bandwidth(pool, buffer, 1);
  const std::string trip = o.threads < 2 ? "-" : fmt::format("{:.0f} ns", thread_round_trip_ns(pool));
  fmt::print("bandwidth {:.1f} GB/s | round trip {}\n", bandwidth / 1e9, trip);
  return 0;
}

}  // namespace

Action add_bench_phase(CLI::App& app) {
  auto o = std::make_shared<PhaseOptions>();
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--bandwidth-mib", o->bandwidth_mib, "buffer read for the bandwidth")->capture_default_str();
  return [o] { return bench_phase(*o); };
}

}  // namespace snapkv::cli

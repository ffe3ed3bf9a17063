// snapkv bench phase: this moment's memory read bandwidth, the pool threads' cache-line round trip
// and the rate at which the 8-bit decode kernel streams the same bytes, on one line. Some machines
// (VMs especially) switch between phases, seconds to minutes long, that move a decode run by tens
// of per cent, so an alternating comparison of two builds (bench/scripts/ab_decode.py) classes
// each pair by the reading taken just before it; the kernel's rate against the plain read shows
// whether decode keeps up with memory in that phase.
// It times an engine kernel and the probes directly, so it is built on the engine's internals
// (snapkv_internal), not on the public API.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ops/matvec_q8.h"
#include "ops/rows8.h"
#include "probes/peak.h"
#include "probes/round_trip.h"
#include "snapkv/timer.h"
#include "subcommands.h"
#include "util/aligned_vector.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace snapkv::cli {
namespace {

struct PhaseOptions {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double bandwidth_mib = 256;
};

// Bytes per second of the Q4_1 8-bit-activation decode kernel over `bytes`, read as interleaved
// matrices of the default model's feed-forward shape (1536 x 576), one pool job each with its rows
// split among the threads, as a decode step runs them. The bytes must all be 0x11: valid blocks
// (scales and mins 0x1111, a normal f16) in any layout.
double q8_matvec_bandwidth(ThreadPool& pool, std::span<const uint8_t> bytes) {
  const int64_t n_in = 576, n_out = 1536;
  const std::vector<float> xf(n_in, 0.5f);
  Q8Activations x;
  quantize_q8(xf.data(), n_in, 1, x);
  std::vector<float> y(n_out);
  WeightMatrix w = make_weight_matrix(GgmlType::Q4_1, bytes.data(), n_in, n_out);
  const size_t matrix = static_cast<size_t>(n_out) * w.row_bytes;
  const size_t n = bytes.size() / matrix;
  const Timer timer;
  for (size_t i = 0; i < n; ++i) {
    w.data = w.rows8 = bytes.data() + i * matrix;
    const MatmulJob job[] = {{&w, y.data()}};
    matvec_q8_many(job, x, pool);
  }
  return static_cast<double>(n * matrix) / timer.seconds();
}

int bench_phase(const PhaseOptions& o) {
  if (o.threads < 1) fail(ErrorKind::kInvalidArgument, "-t must be >= 1");
  if (!(o.bandwidth_mib >= 64)) fail(ErrorKind::kInvalidArgument, "--bandwidth-mib must be at least 64");
  ThreadPool pool(o.threads);
  AlignedVector<float> buffer(static_cast<size_t>(o.bandwidth_mib * (1 << 20)) / sizeof(float));
  const std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(buffer.data()), buffer.size() * sizeof(float));
  std::fill(bytes.begin(), bytes.end(), uint8_t{0x11});
  read_bandwidth(pool, buffer, 1);  // the first pass also wakes the threads; not counted
  const std::string matvec = rows8_wanted(MatmulActivations::kQ8)
                                 ? fmt::format("{:.1f} GB/s", q8_matvec_bandwidth(pool, bytes) / 1e9)
                                 : "-";
  const double bandwidth = read_bandwidth(pool, buffer, 1);
  const std::string trip = o.threads < 2 ? "-" : fmt::format("{:.0f} ns", thread_round_trip_ns(pool));
  fmt::print("bandwidth {:.1f} GB/s | round trip {} | Q4_1 q8 matvec {}\n", bandwidth / 1e9, trip, matvec);
  return 0;
}

}  // namespace

Action add_bench_phase(CLI::App& app) {
  auto o = std::make_shared<PhaseOptions>();
  app.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  app.add_option("--bandwidth-mib", o->bandwidth_mib, "buffer read for the bandwidth and the matvec")->capture_default_str();
  return [o] { return bench_phase(*o); };
}

}  // namespace snapkv::cli

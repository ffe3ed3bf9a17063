#pragma once
// `snapkv bench decode --llama-bench PATH`: snapkv against llama.cpp's own llama-bench, run
// natively on the same GGUF with the same threads, the two taking turns run by run in one
// invocation (scripts/build_llamacpp.sh builds the binary).
//
// Per prompt length P and repetition: each of our contenders once (a fresh process: an untimed
// prefill of P tokens, the timed one, then N decode steps after one untimed step), and llama-bench once for prefill
// (`-p P -n 0`) and once for decode at the same depth (`-p 0 -n N -d P`), each with flash
// attention off and on (`-fa 0,1`, one repetition, `-o json`; or only the setting asked for), the
// better of the two kept. Without warm-up, neither engine runs its untimed prompt first. The
// memory read bandwidth is measured before each repetition, for the decode's bound: (bytes of
// weights a decode step reads + KV bytes) / bandwidth.
#include <functional>
#include <string>
#include <vector>

namespace snapkv::cli {

struct PeerBenchOptions {
  std::string llama_bench;  // the llama-bench binary
  std::string model;
  std::vector<int> lengths;     // prompt lengths P
  std::vector<int> capacities;  // SnapKV contenders of ours besides the full cache (those below P)
  int n_decode = 64;
  int reps = 5;
  int threads = 1;
  std::string fa_prefill = "0,1", fa_decode = "0,1";  // llama-bench's -fa for each measurement
  bool warmup = true;  // llama-bench's warm-up prompt (ours: MeasureOurs's own)
  std::string decode_activations;  // ours, for the report
  std::string out;                 // directory for bench_llamacpp.md / .json; empty: print only
};

// One measurement of ours: prefill seconds, ms per decode step at batch 1, KV bytes after the
// prefill.
struct OurRun {
  double prefill_s = 0, decode_ms = 0, kv_bytes = 0;
};

// Measures ours for prompt length `length` with SnapKV capacity `capacity` (0: the full cache),
// in a fresh process.
using MeasureOurs = std::function<OurRun(int length, int capacity)>;

// Error(kInvalidArgument) unless path is an executable file.
void check_llama_bench(const std::string& path);

int bench_versus_llama_bench(const PeerBenchOptions& o, const MeasureOurs& measure_ours);

}  // namespace snapkv::cli

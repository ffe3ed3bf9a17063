#pragma once
// The flags every `snapkv eval` evaluation shares: model, data folder, prompt lengths, presses and
// capacities, output folder, threads and the KV options. The press and its budget are what an
// evaluation varies, so --kv-press, --kv-capacity, --kv-ratio and --kv-recompress are not offered.
#include <CLI/CLI.hpp>

#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "kv_options.h"
#include "model_options.h"
#include "snapkv/model.h"

namespace snapkv::cli {

struct EvalOptions {
  std::string model = kDefaultModel;
  std::string data;  // "": resolve_data_dir's rule (snapkv/data_dir.h)
  std::vector<int> lengths;
  std::vector<int> capacities = {128, 256, 512, 1024};
  std::vector<std::string> presses;
  std::string out;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  KvOptions kv;
  ModelFlags model_flags;

  // -t and --decode-activations as the model's options; Error(kInvalidArgument) when invalid.
  ModelOptions model_options() const;
};

void add_eval_options(CLI::App& app, EvalOptions& o, const std::string& lengths_help, const std::string& out_help);

// "42 s" below a minute, else "3m07s" (progress lines and summaries).
std::string format_duration(double seconds);

// One progress line on stderr, rewritten in place: a bar, done/total, what runs, elapsed and ETA;
// what "" ends the line.
void print_progress(int done, int total, const std::string& what, double elapsed_s);

}  // namespace snapkv::cli

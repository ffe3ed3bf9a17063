#include "eval_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "snapkv/data_dir.h"
#include "snapkv/error.h"
#include "snapkv/press.h"

namespace snapkv::cli {

void add_eval_options(CLI::App& app, EvalOptions& o, const std::string& lengths_help, const std::string& out_help) {
  app.add_option("-m,--model", o.model, "GGUF model file")->capture_default_str();
  app.add_option("--data", o.data,
                 fmt::format("evaluation data folder (holds niah_paulgraham/); default $SNAPKV_DATA, else {}",
                             kDefaultDataDir));
  app.add_option("--lengths", o.lengths, lengths_help)->delimiter(',')->capture_default_str();
  app.add_option("--capacity", o.capacities, "KV capacities C per KV head (window included), comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--presses", o.presses, fmt::format("presses, comma-separated: {}; each may carry options of its own, "
                                                      "as snapkv+budget=ada+chunk=20 (the --kv-* options' names)",
                                                      fmt::join(press_names(), ", ")))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--out", o.out, out_help);
  app.add_option("-t,--threads", o.threads, "threads")->capture_default_str();
  add_kv_options(app, o.kv);
  add_model_flags(app, o.model_flags);
  for (const char* name : {"--kv-press", "--kv-capacity", "--kv-ratio", "--kv-recompress"}) {
    app.remove_option(app.get_option(name));
  }
}

ModelOptions EvalOptions::model_options() const {
  if (threads < 1 || threads > 512) throw Error(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  return model_flags.model_options(threads);
}

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

void print_progress(int done, int total, const std::string& what, double elapsed_s) {
  const double eta = done ? elapsed_s / done * (total - done) : 0;
  const int width = 30, fill = total ? width * std::min(done, total) / total : width;
  fmt::print(stderr, "\r[{}{}] {}/{} {} elapsed {} ETA {}   ", std::string(static_cast<size_t>(fill), '#'),
             std::string(static_cast<size_t>(width - fill), '.'), done, total, what, format_duration(elapsed_s),
             done ? format_duration(eta) : "?");
  if (what.empty()) fmt::print(stderr, "\n");
}

}  // namespace snapkv::cli

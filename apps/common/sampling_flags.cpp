#include "sampling_flags.h"

namespace snapkv::cli {

void add_sampling_flags(CLI::App& app, SamplingParams& s) {
  app.add_option("--temp", s.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalty looks back")->capture_default_str();
  app.add_option("--seed", s.seed, "sampling seed")->capture_default_str();
}

}  // namespace snapkv::cli

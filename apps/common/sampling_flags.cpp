#include "sampling_flags.h"

namespace snapkv::cli {

void add_sampling_flags(CLI::App& app, SamplingParams& s, bool with_seed) {
  app.add_option("--temp", s.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalty looks back")->capture_default_str();
  if (with_seed) app.add_option("--seed", s.seed, "sampling seed")->capture_default_str();
}

SamplingParams given_sampling_flags(const CLI::App& app, const SamplingParams& flags, SamplingParams base) {
  const auto given = [&](const char* name) { return app.get_option_no_throw(name) && app.get_option_no_throw(name)->count() > 0; };
  if (given("--temp")) base.temperature = flags.temperature;
  if (given("--top-k")) base.top_k = flags.top_k;
  if (given("--top-p")) base.top_p = flags.top_p;
  if (given("--min-p")) base.min_p = flags.min_p;
  if (given("--repeat-penalty")) base.repeat_penalty = flags.repeat_penalty;
  if (given("--repeat-last-n")) base.repeat_last_n = flags.repeat_last_n;
  if (given("--seed")) base.seed = flags.seed;
  return base;
}

}  // namespace snapkv::cli

// snapkv eval SUITE (niah, longeval_lines, ruler, longbench, leval): the flags, a progress bar,
// and the summary and plots of the results. The run itself is evaluate_suite (snapkv/eval.h):
// every case prefilled once, answered with every press at every capacity, one line per case x
// press x capacity in <out>/<suite>.jsonl.gz (resumable); <suite>.md and the SVG plots are
// rewritten at the end.
#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "eval_options.h"
#include "eval_report.h"
#include "spec_flags.h"
#include "snapkv/error.h"
#include "snapkv/eval.h"
#include "snapkv/model.h"

namespace snapkv::cli {
namespace {

struct SuiteOptions : EvalOptions {
  SuiteOptions() { presses = EvalSuiteOptions{}.presses; }
  std::string suite;
  std::vector<std::string> tasks;
  int limit = 0;
  int max_tokens = 0;  // 0: each case's own
  uint64_t seed = 42;
  std::vector<int> depths;
  std::string needle, question, needle_answer;
  bool question_first = false, question_agnostic = false;
  bool report_only = false;
  SpecFlags spec;

  QuestionPlacement placement() const {
    return question_first ? QuestionPlacement::kFirst
                          : question_agnostic ? QuestionPlacement::kAgnostic : QuestionPlacement::kEnd;
  }
  EvalSuiteOptions suite_options() const;
};

EvalSuiteOptions SuiteOptions::suite_options() const {
  EvalSuiteOptions e;
  e.suite = suite;
  e.data = data;
  e.lengths = lengths;
  e.tasks = tasks;
  e.limit = limit;
  e.max_tokens = max_tokens;
  e.seed = seed;
  e.depths = depths;
  e.needle = needle;
  e.question = question;
  e.needle_answer = needle_answer;
  e.placement = placement();
  e.presses = presses;
  e.capacities = capacities;
  const auto so = kv.session_options();
  e.kv_type = so.kv_type;
  e.base = so.press;
  e.out = out;
  e.report_only = report_only;
  e.speculation = spec.params();
  return e;
}

// The flags' own errors, named as flags, then the library's checks; all before the model loads.
void check_flags(const SuiteOptions& o) {
  const auto bad = [](const std::string& msg) { throw Error(ErrorKind::kInvalidArgument, msg); };
  if (o.out.empty()) bad(fmt::format("--out is required (the folder for {}.jsonl.gz)", o.suite));
  if (o.limit < 0) bad(fmt::format("--limit must be 0 (all) or positive, got {}", o.limit));
  if (o.max_tokens < 0) bad(fmt::format("--max-tokens must be 0 (the suite's) or positive, got {}", o.max_tokens));
  if (o.question_first && o.question_agnostic) bad("--question-first and --question-agnostic exclude each other");
  if (const std::string err = o.suite_options().validate(); !err.empty()) bad(err);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_suite_cmd(const SuiteOptions& o) {
  const auto wall = std::chrono::steady_clock::now();
  check_flags(o);
  const ModelOptions mo = o.model_options();
  const Model model = Model::load(o.model, mo);
  const ModelInfo& info = model.info();
  const std::string placement = placement_name(o.placement());

  EvalSuiteCallbacks cb;
  cb.plan = [&](const EvalSuitePlan& p) {
    fmt::print(stderr,
               "model: {} ({} layers), {} threads; {}: {} cases built in {}, {}; {} results, {} already in {}\n",
               info.name, info.n_layer, mo.threads, o.suite, p.n_cases, format_duration(p.build_s), placement,
               p.results_total, p.results_done, p.results_path);
  };
  cb.progress = [&](const EvalSuiteProgress& p) {
    print_progress(p.results_run, p.results_todo, p.what, p.elapsed_s);
  };
  const EvalSuiteResult r = evaluate_suite(model, o.suite_options(), cb);
  fmt::print("{}", write_eval_report(r, o.presses, o.capacities, o.out));
  std::fflush(stdout);
  fmt::print(stderr, "done: {} results run, {} skipped, in {} (wall, model load included); results in {}\n",
             r.results_run, r.results_skipped, format_duration(seconds_since(wall)), o.out);
  return 0;
}

}  // namespace

Action add_eval_suite(CLI::App& app, const std::string& suite) {
  auto o = std::make_shared<SuiteOptions>();
  o->suite = suite;
  add_eval_options(app, *o, "prompt lengths in tokens (answer included), comma-separated; default: the suite's",
                   fmt::format("folder for {0}.jsonl.gz (resumable), {0}.md and {0}_*.svg", suite));
  app.get_option("--out")->required();
  app.add_option("--tasks", o->tasks, "the suite's tasks, comma-separated; default: all")->delimiter(',');
  app.add_option("--limit", o->limit, "cases per task and length at most; 0: all")->capture_default_str();
  app.add_option("--seed", o->seed, "seed of generated cases")->capture_default_str();
  app.add_option("--max-tokens", o->max_tokens, "answer tokens at most (greedy); 0: the suite's")
      ->capture_default_str();
  app.add_flag("--report", o->report_only,
               "run nothing: write the summary and plots from the results already in --out (e.g. of a stopped run)");
  app.add_flag("--question-first", o->question_first, "put the question before the context (paper Fig. 5)");
  app.add_flag("--question-agnostic", o->question_agnostic,
               "compress the context before the question is prefilled (the window is the context's tail)");
  add_spec_flags(app, o->spec);
  if (suite == "niah" || suite == "longeval_lines") {
    app.add_option(suite == "niah" ? "--depths" : "--positions", o->depths,
                   suite == "niah" ? "needle depths in percent, comma-separated; default 0,25,50,75,100"
                                   : "answer positions of generated cases in percent; default 0,25,50,75,100")
        ->delimiter(',');
  }
  if (suite == "niah") {
    app.add_option("--needle", o->needle, "the needle sentence; default the San Francisco one");
    app.add_option("--question", o->question, "the question about the needle");
    app.add_option("--needle-answer", o->needle_answer,
                   "the phrase whose presence in the answer scores 'substring' (default: the needle's key phrase, or "
                   "the whole --needle)");
  }
  return [o] { return run_suite_cmd(*o); };
}

}  // namespace snapkv::cli

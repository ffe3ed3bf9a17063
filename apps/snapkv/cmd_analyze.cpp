// snapkv analyze: the SnapKV paper's observations on any model and prompts (snapkv/analyze.h), one
// subcommand each: hit-rate (Figs. 2, 3), overlap (Fig. 4), pooling (Fig. 8) and map. Prompts come
// from an evaluation suite (--suite), a JSONL file (--prompts-file) or a context file with
// questions (-f with --question / --questions-file). Each writes <out>/<name>.json and its plots.
#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "analyze_report.h"
#include "commands.h"
#include "eval_options.h"
#include "kv_options.h"
#include "snapkv/analyze.h"
#include "snapkv/error.h"
#include "snapkv/model.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

// The flags every analysis shares: model, threads, KV options, where the prompts come from, --out.
struct AnalyzeFlags {
  std::string model = kDefaultModel;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ModelFlags model_flags;
  KvOptions kv;
  std::string out;
  std::string suite, data, prompts_file, context_file, question, questions_file;
  std::vector<int> lengths, depths;
  std::vector<std::string> tasks;
  int limit = 0;
  uint64_t seed = 42;
  std::string chat_template;

  // press: the press flags' defaults; none (nullptr) when the analysis runs no press (only --kv-type).
  void add(CLI::App& app, const std::string& default_suite, const PressConfig* press) {
    suite = default_suite;
    if (press) kv.press = *press;
    app.add_option("-m,--model", model, "GGUF model file")->capture_default_str();
    app.add_option("-t,--threads", threads, "threads")->capture_default_str();
    add_model_flags(app, model_flags);
    add_kv_options(app, kv);
    if (!press) {
      for (const PressParam& p : press_params()) app.remove_option(app.get_option(p.flag()));
    }
    app.add_option("--out", out, "folder for the JSON results and the plots")->required();
    app.add_option("--suite", suite, fmt::format("prompts from this evaluation suite ({})", fmt::join(eval_suite_names(), ", ")))
        ->capture_default_str();
    app.add_option("--data", data, "evaluation data folder; default $SNAPKV_DATA, else ../shared/data");
    app.add_option("--lengths", lengths, "the suite's prompt lengths in tokens, comma-separated")->delimiter(',');
    app.add_option("--tasks", tasks, "the suite's tasks, comma-separated; default: all")->delimiter(',');
    app.add_option("--depths", depths, "niah: needle depths; longeval_lines: answer positions (percent), comma-separated")
        ->delimiter(',');
    app.add_option("--limit", limit, "cases per task and length at most; 0: all")->capture_default_str();
    app.add_option("--seed", seed, "seed of generated cases")->capture_default_str();
    app.add_option("--prompts-file", prompts_file,
                   "JSONL, one case a line: {\"context\": ..., \"question\": ..., \"answers\": [...], \"id\": ...} "
                   "(instead of --suite)");
    app.add_option("-f,--context-file", context_file, "a text file: the context (instead of --suite)");
    app.add_option("--question", question, "with -f: the question");
    app.add_option("--questions-file", questions_file, "with -f: questions, one a line (one case each)");
    app.add_option("--chat-template", chat_template, "chat template name; default: the model's own");
  }

  // Flag errors, before the model loads.
  AnalyzeInput input() const {
    const auto bad = [](const std::string& m) { throw Error(ErrorKind::kInvalidArgument, m); };
    AnalyzeInput in;
    in.data = data;
    in.lengths = lengths;
    in.depths = depths;
    in.tasks = tasks;
    in.limit = limit;
    in.seed = seed;
    in.chat_template = chat_template;
    in.kv_type = kv.session_options().kv_type;
    if (!prompts_file.empty() && !context_file.empty()) bad("--prompts-file and -f exclude each other");
    if (context_file.empty() && (!question.empty() || !questions_file.empty())) {
      bad("--question and --questions-file go with -f (the context they ask about)");
    }
    if (!prompts_file.empty()) {
      in.cases = parse_analyze_cases(read_text_file(prompts_file), prompts_file);
    } else if (!context_file.empty()) {
      const std::string context = read_text_file(context_file);
      std::vector<std::string> qs;
      if (!question.empty()) qs.push_back(question);
      if (!questions_file.empty()) {
        std::istringstream lines(read_text_file(questions_file));
        for (std::string l; std::getline(lines, l);) {
          if (!l.empty() && l.back() == '\r') l.pop_back();
          if (l.find_first_not_of(" \t") != std::string::npos) qs.push_back(l);
        }
      }
      if (qs.empty()) bad("-f needs --question or --questions-file");
      for (size_t i = 0; i < qs.size(); ++i) in.cases.push_back({fmt::format("q{}", i + 1), context, qs[i], {}});
    } else {
      in.suite = suite;
    }
    if (const std::string err = in.validate(); !err.empty()) bad(err);
    return in;
  }

  Model load() const {
    if (threads < 1 || threads > 512) throw Error(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
    return Model::load(model, model_flags.model_options(threads));
  }
};

AnalyzeProgressFn progress_bar() {
  return [](const AnalyzeProgress& p) { print_progress(p.done, p.total, p.what, p.elapsed_s); };
}

void write_json(const fs::path& out, const std::string& name, const nlohmann::json& j) {
  std::error_code ec;
  fs::create_directories(out, ec);
  write_text_file(out / (name + ".json"), j.dump(1) + "\n");
}

Action add_hit_rate(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  auto o = std::make_shared<HitRateOptions>();
  auto first = std::make_shared<std::string>("end");
  f->add(app, "longbench", nullptr);
  app.add_option("--window", o->window, "observation window W")->capture_default_str();
  app.add_option("--top-p", o->top_p, "share of the prefix each head votes for")->capture_default_str();
  app.add_option("--theta", o->theta, "attention above which a generated query's position is significant")
      ->capture_default_str();
  app.add_option("--gen-windows", o->gen_windows, "generation windows")->capture_default_str();
  app.add_option("--gen-window-size", o->gen_window_size, "generated tokens per window")->capture_default_str();
  app.add_option("--question-at", *first, "end, start, or both (paper Fig. 3)")
      ->check(CLI::IsMember({"end", "start", "both"}))
      ->capture_default_str();
  return [f, o, first] {
    o->input = f->input();
    o->placements.clear();
    if (*first != "start") o->placements.push_back(QuestionPlacement::kEnd);
    if (*first != "end") o->placements.push_back(QuestionPlacement::kFirst);
    if (const std::string err = o->validate(); !err.empty()) throw Error(ErrorKind::kInvalidArgument, err);
    const Model model = f->load();
    const HitRateResult r = analyze_hit_rate(model, *o, progress_bar());
    write_json(f->out, "hit_rate", hit_rate_json(r, *o));
    fmt::print("{}", write_hit_rate_plots(r, *o, f->out));
    return 0;
  };
}

Action add_overlap(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  auto o = std::make_shared<OverlapOptions>();
  f->add(app, "leval", nullptr);
  app.add_option("--top-p", o->top_p, "share of the document each head votes for")->capture_default_str();
  app.add_option("--answer-tokens", o->answer_tokens, "answer tokens generated after each question (in the window)")
      ->capture_default_str();
  return [f, o] {
    o->input = f->input();
    if (const std::string err = o->validate(); !err.empty()) throw Error(ErrorKind::kInvalidArgument, err);
    const Model model = f->load();
    const OverlapResult r = analyze_overlap(model, *o, progress_bar());
    write_json(f->out, "overlap", overlap_json(r, *o));
    fmt::print("{}", write_overlap_plot(r, f->out));
    return 0;
  };
}

Action add_pooling(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  auto o = std::make_shared<PoolingOptions>();
  f->add(app, "longeval_lines", &o->press);
  app.add_option("--kernels", o->kernels, "pooling kernels (odd; 1: no pooling), comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--capacity", o->capacities, "KV capacities C per KV head, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--max-tokens", o->max_tokens, "answer tokens at most; 0: the case's")->capture_default_str();
  app.remove_option(app.get_option("--kv-capacity"));
  app.remove_option(app.get_option("--kv-kernel"));
  return [f, o] {
    o->input = f->input();
    o->press = f->kv.session_options().press;
    if (const std::string err = o->validate(); !err.empty()) throw Error(ErrorKind::kInvalidArgument, err);
    const Model model = f->load();
    const PoolingResult r = analyze_pooling(model, *o, progress_bar());
    write_json(f->out, "pooling", pooling_json(r, *o));
    fmt::print("{}", write_pooling_plots(r, *o, f->out));
    return 0;
  };
}

Action add_map(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  auto o = std::make_shared<MapOptions>();
  f->add(app, "niah", &o->press);
  app.add_option("--case", o->case_id, "the case's id; default: the first");
  return [f, o] {
    o->input = f->input();
    o->press = f->kv.session_options().press;
    if (const std::string err = o->validate(); !err.empty()) throw Error(ErrorKind::kInvalidArgument, err);
    const Model model = f->load();
    fmt::print(stderr, "map: prefill and {}\n", o->press.describe());
    const KeptMap m = analyze_map(model, *o);
    write_json(f->out, "map", map_json(m));
    fmt::print("{}", write_map_plot(m, f->out));
    return 0;
  };
}

}  // namespace

Action add_analyze(CLI::App& app) {
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Action>> subs;
  const auto add = [&](const char* name, const char* help, Action (*fn)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    subs.emplace_back(sub, fn(*sub));
  };
  add("hit-rate", "do the positions the observation window votes for stay those generation attends to (Figs. 2, 3)",
      add_hit_rate);
  add("overlap", "do different questions on one document vote for different positions (Fig. 4)", add_overlap);
  add("pooling", "retrieval with pooling kernels 1..k at fixed budgets, and the answer's tokens kept (Fig. 8)",
      add_pooling);
  add("map", "an image of the positions a press keeps per layer and KV head, for one prompt", add_map);
  return [subs] {
    for (const auto& [sub, action] : subs) {
      if (sub->parsed()) return action();
    }
    return 1;
  };
}

}  // namespace snapkv::cli

// snapkv eval: evaluations of KV-cache compression, one sub-subcommand each. `fidelity` is the
// first (model-independent quality of compression); task suites (niah, ruler, ...) register next
// to it in add_eval, each with its own add_eval_* function.
#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "commands.h"
#include "internal_bridge.h"
#include "eval_options.h"
#include "eval/fidelity.h"
#include "eval/suite.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "kv_options.h"
#include "model/model.h"
#include "text_file.h"
#include "util/error.h"
#include "util/thread_pool.h"
#include "snapkv/timer.h"

namespace snapkv::cli {
namespace {

struct FidelityOptions : EvalOptions {
  FidelityOptions() {
    lengths = FidelityParams{}.lengths;
    capacities = FidelityParams{}.capacities;
    presses = FidelityParams{}.presses;
  }
  int n_eval = FidelityParams{}.n_eval;
};

nlohmann::json cell_json(const FidelityCell& c, const FidelityParams& p, const ModelHparams& hp) {
  const PressConfig pc = p.cell_config(c.press, c.capacity);
  return {
      {"length", c.length},
      {"press", c.press},
      {"capacity", c.capacity},
      {"n_eval", c.n_scored},
      {"top1", c.top1},
      {"kl_mean", c.kl_mean},
      {"kl_max", c.kl_max},
      {"nll_full", c.nll_full},
      {"nll_press", c.nll_press},
      {"nll_delta", c.nll_delta()},
      {"kept_bytes", c.kept_bytes},
      {"full_bytes", c.full_bytes},
      {"kept_entries", c.kept_entries},
      {"full_entries", c.full_entries},
      {"kept_fraction", static_cast<double>(c.kept_bytes) / static_cast<double>(std::max<size_t>(1, c.full_bytes))},
      {"seconds", c.seconds},
      {"model", hp.name},
      {"kv_type", kv_type_name(p.kv_type)},
      {"window", pc.window},
      {"kernel", pc.kernel},
      {"pool", pool_name(pc.pool)},
      {"gqa", gqa_name(pc.gqa)},
      {"variant", variant_name(pc.variant)},
      {"compress_short", pc.compress_short},
  };
}

// Three tables (top-1 agreement, KL, NLL increase) plus the share of KV bytes kept; rows are
// L x press, columns capacities. Holds no timings, so the same run prints the same text.
std::string markdown(const std::vector<FidelityCell>& cells, const FidelityParams& p, const ModelHparams& hp,
                     size_t n_text_files) {
  std::map<std::tuple<int, std::string, int>, const FidelityCell*> at;
  for (const FidelityCell& c : cells) at[{c.length, c.press, c.capacity}] = &c;
  const PressConfig& b = p.base;
  std::string md = fmt::format(
      "Model {} ({} layers, {} / {} KV heads); text: the Paul Graham essays ({} files, concatenated in name "
      "order), first L tokens pressed, next {} tokens scored against the full cache. KV {}; window {}, kernel "
      "{}, pool {}, gqa {}, variant {}, prompts <= C tokens {}. C = entries kept per KV head, window included.\n",
      hp.name, hp.n_layer, hp.n_head, hp.n_head_kv, n_text_files, p.n_eval, kv_type_name(p.kv_type), b.window,
      b.kernel, pool_name(b.pool), gqa_name(b.gqa), variant_name(b.variant),
      b.compress_short ? "pressed anyway" : "kept whole");
  const auto table = [&](const std::string& title, auto cell_text, bool bold_best) {
    md += fmt::format("\n### {}\n\n| L | press |", title);
    for (int c : p.capacities) md += fmt::format(" C={} |", c);
    md += "\n|---:|---|";
    for (size_t i = 0; i < p.capacities.size(); ++i) md += "---:|";
    md += "\n";
    for (int l : p.lengths) {
      for (const std::string& press : p.presses) {
        md += fmt::format("| {} | {} |", l, press);
        for (int c : p.capacities) {
          const FidelityCell* cell = at.at({l, press, c});
          // The best top-1 agreement among the compressing presses of this L and C, in bold.
          bool best = false;
          if (bold_best && press != "full") {
            best = true;
            for (const std::string& other : p.presses) {
              if (other != "full" && at.at({l, other, c})->top1 > cell->top1) best = false;
            }
          }
          const std::string text = cell_text(*cell);
          md += best ? fmt::format(" **{}** |", text) : fmt::format(" {} |", text);
        }
        md += "\n";
      }
    }
  };
  table("Top-1 agreement with the full cache (%, higher is better; best compressing press in bold)",
        [](const FidelityCell& c) { return fmt::format("{:.1f}", 100 * c.top1); }, true);
  table("Mean KL(P_full || P_press) per token (nats, lower is better)",
        [](const FidelityCell& c) { return fmt::format("{:.4f}", c.kl_mean); }, false);
  std::string nll_title = "NLL increase of the actual next tokens (nats per token, lower is better; full NLL:";
  for (int l : p.lengths) {
    const auto it = std::find_if(cells.begin(), cells.end(), [&](const FidelityCell& c) { return c.length == l; });
    if (it != cells.end()) nll_title += fmt::format(" {:.3f} at L={}", it->nll_full, l);
  }
  table(nll_title + ")", [](const FidelityCell& c) { return fmt::format("{:+.4f}", c.nll_delta()); }, false);
  table("KV bytes kept (% of the full cache)", [](const FidelityCell& c) {
    return fmt::format("{:.1f}", 100.0 * static_cast<double>(c.kept_bytes) /
                                     static_cast<double>(std::max<size_t>(1, c.full_bytes)));
  }, false);
  return md;
}

int run_fidelity_cmd(const FidelityOptions& o) {
  if (o.threads < 1 || o.threads > 512) fail(ErrorKind::kInvalidArgument, "-t must be between 1 and 512");
  FidelityParams params;
  params.lengths = o.lengths;
  params.capacities = o.capacities;
  params.presses = o.presses;
  params.n_eval = o.n_eval;
  const SequenceOptions so = sequence_options(o.kv.session_options());
  params.kv_type = so.kv_type;
  params.base = so.press;
  // Flag errors first, before anything is loaded; the context check needs the model.
  if (const std::string err = params.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  namespace fs = std::filesystem;
  std::ofstream jsonl;
  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    jsonl.open(fs::path(o.out) / "fidelity.jsonl", std::ios::trunc);
    if (ec || !jsonl) fail(ErrorKind::kBadFile, "{}: cannot write fidelity.jsonl there (--out)", o.out);
  }

  Timer wall;
  size_t n_files = 0;
  const std::string text = read_paul_graham_essays(o.data, &n_files);
  const auto file = GgufFile::open(o.model, file_memory_for(o.model_flags));
  const auto model = load_decoder(*file, decoder_options_for(o.model_flags));
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const ModelHparams& hp = model->hparams();
  if (const std::string err = params.validate(hp.n_ctx_train); !err.empty()) {
    fail(ErrorKind::kInvalidArgument, "{}", err);
  }
  const std::vector<int32_t> ids = encode_prefix(*tokenizer, text, params.tokens_needed());
  if (static_cast<int64_t>(ids.size()) < params.tokens_needed()) {
    fail(ErrorKind::kOutOfRange, "the essays have {} tokens; --lengths and --n-eval need {}", ids.size(),
         params.tokens_needed());
  }
  fmt::print(stderr, "model: {} ({}, {} layers), {} threads; {} cells ({} lengths x {} presses x {} capacities)\n",
             hp.name, hp.arch, hp.n_layer, o.threads,
             params.lengths.size() * params.presses.size() * params.capacities.size(), params.lengths.size(),
             params.presses.size(), params.capacities.size());

  // ETA from what this run measured so far: the last prefill, scaled as L^1.5 to the lengths left
  // (its matmuls grow as L, its attention as L^2), and the mean cell time of the current length, scaled as sqrt(L) (the continuation's
  // matmuls are the same at every L, the cache copy and attention over it are not).
  const int cells_per_length = static_cast<int>(params.presses.size() * params.capacities.size());
  size_t length_index = 0;
  int cells_in_length = 0;
  double prefill_start = 0, prefill_s = 0, cell_sum = 0;
  ThreadPool pool(o.threads);
  const auto progress = [&](const FidelityProgress& p) {
    if (!p.cell) {
      fmt::print(stderr, "L={}: prefill with the full cache, elapsed {}\n", p.length, format_duration(p.elapsed_s));
      length_index = static_cast<size_t>(
          std::find(params.lengths.begin(), params.lengths.end(), p.length) - params.lengths.begin());
      prefill_start = p.elapsed_s;
      cells_in_length = 0;
      cell_sum = 0;
      return;
    }
    if (cells_in_length == 0) prefill_s = p.elapsed_s - prefill_start - p.cell->seconds;
    ++cells_in_length;
    cell_sum += p.cell->seconds;
    const double l = params.lengths[length_index], cell_s = cell_sum / cells_in_length;
    double eta = (cells_per_length - cells_in_length) * cell_s;
    for (size_t i = length_index + 1; i < params.lengths.size(); ++i) {
      const double r = params.lengths[i] / l;
      eta += prefill_s * std::pow(r, 1.5) + cells_per_length * cell_s * std::sqrt(r);
    }
    const FidelityCell& c = *p.cell;
    fmt::print(stderr, "[{}/{}] L={} {} C={}: top-1 {:.1f} %, KL {:.4f}, dNLL {:+.4f} ({:.1f} s), elapsed {}, ETA {}\n",
               p.cells_done, p.cells_total, c.length, c.press, c.capacity, 100 * c.top1, c.kl_mean, c.nll_delta(),
               c.seconds, format_duration(p.elapsed_s), format_duration(eta));
    if (jsonl.is_open()) jsonl << cell_json(c, params, hp).dump() << "\n" << std::flush;
  };
  const std::vector<FidelityCell> cells = run_fidelity(*model, ids, params, pool, progress);

  const std::string md = markdown(cells, params, hp, n_files);
  fmt::print("{}", md);
  std::fflush(stdout);
  if (!o.out.empty()) {
    write_text_file(fs::path(o.out) / "fidelity.md", md);
    if (!jsonl) fail(ErrorKind::kBadFile, "{}: writing the results failed", o.out);
  }
  fmt::print(stderr, "done: {} cells in {} (wall, model load included){}\n", cells.size(),
             format_duration(wall.seconds()), o.out.empty() ? "" : fmt::format("; results in {}", o.out));
  return 0;
}

Action add_eval_fidelity(CLI::App& app) {
  auto o = std::make_shared<FidelityOptions>();
  add_eval_options(app, *o, "prompt lengths L in tokens, comma-separated",
                   "folder for fidelity.jsonl (one line per cell) and fidelity.md");
  app.add_option("--n-eval", o->n_eval, "continuation tokens scored after each prompt")->capture_default_str();
  return [o] { return run_fidelity_cmd(*o); };
}

}  // namespace

Action add_eval(CLI::App& app) {
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Action>> evals;
  CLI::App* fidelity = app.add_subcommand(
      "fidelity", "next-token KL, top-1 agreement and NLL increase of every press against the full cache");
  evals.emplace_back(fidelity, add_eval_fidelity(*fidelity));
  const std::map<std::string, std::string> help = {
      {"niah", "needle in a haystack (Paul Graham essays): lengths x depths"},
      {"longeval_lines", "LongEval lines retrieval: LongChat's cases that fit, and generated ones (length x position)"},
      {"ruler", "RULER synthetic tasks (niah single/multikey/multivalue/multiquery, vt, cwe, fwe), generated"},
      {"longbench", "LongBench multi_news summaries, ROUGE-L"},
      {"leval", "L-Eval closed-ended tasks (exam, F1) that fit the context"},
  };
  for (const std::string& name : suite_names()) {
    CLI::App* sub = app.add_subcommand(
        name, fmt::format("{}; every press and capacity on one prefill per case", help.count(name) ? help.at(name) : name));
    evals.emplace_back(sub, add_eval_suite(*sub, name));
  }
  return [evals] {
    for (const auto& [sub, action] : evals) {
      if (sub->parsed()) return action();
    }
    return 1;  // unreachable: require_subcommand(1)
  };
}

}  // namespace snapkv::cli

// snapkv eval: evaluations of KV-cache compression, one sub-subcommand each. `fidelity` is the
// first (model-independent quality of compression); task suites (niah, ruler, ...) register next
// to it in add_eval, each with its own add_eval_* function.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "commands.h"
#include "eval_options.h"
#include "snapkv/error.h"
#include "snapkv/eval.h"
#include "snapkv/model.h"
#include "text_file.h"

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

// Three tables (top-1 agreement, KL, NLL increase) plus the share of KV bytes kept; rows are
// L x press, columns capacities. Holds no timings, so the same run prints the same text.
std::string markdown(const std::vector<FidelityCell>& cells, const FidelityParams& p, const ModelInfo& hp,
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
  const auto wall = std::chrono::steady_clock::now();
  FidelityParams params;
  params.lengths = o.lengths;
  params.capacities = o.capacities;
  params.presses = o.presses;
  params.n_eval = o.n_eval;
  const auto so = o.kv.session_options();
  params.kv_type = so.kv_type;
  params.base = so.press;
  // Flag errors first, then the data, before the model is loaded; the context check needs the model.
  const ModelOptions mo = o.model_options();
  if (const std::string err = params.validate(); !err.empty()) throw Error(ErrorKind::kInvalidArgument, err);
  size_t n_files = 0;
  const std::string text = read_paul_graham_essays(o.data, &n_files);
  const Model model = Model::load(o.model, mo);
  const ModelInfo& hp = model.info();
  if (const std::string err = params.validate(hp.n_ctx_train); !err.empty()) {
    throw Error(ErrorKind::kInvalidArgument, err);
  }
  fmt::print(stderr, "model: {} ({}, {} layers), {} threads; {} cells ({} lengths x {} presses x {} capacities)\n",
             hp.name, hp.arch, hp.n_layer, mo.threads,
             params.lengths.size() * params.presses.size() * params.capacities.size(), params.lengths.size(),
             params.presses.size(), params.capacities.size());

  // ETA from what this run measured so far: the last prefill, scaled as L^1.5 to the lengths left
  // (its matmuls grow as L, its attention as L^2), and the mean cell time of the current length,
  // scaled as sqrt(L) (the continuation's matmuls are the same at every L, the cache copy and
  // attention over it are not).
  const int cells_per_length = static_cast<int>(params.presses.size() * params.capacities.size());
  size_t length_index = 0;
  int cells_in_length = 0;
  double prefill_start = 0, prefill_s = 0, cell_sum = 0;
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
  };
  const std::vector<FidelityCell> cells = evaluate_fidelity(model, text, params, o.out, progress);

  const std::string md = markdown(cells, params, hp, n_files);
  fmt::print("{}", md);
  std::fflush(stdout);
  if (!o.out.empty()) write_text_file(std::filesystem::path(o.out) / "fidelity.md", md);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  fmt::print(stderr, "done: {} cells in {} (wall, model load included){}\n", cells.size(), format_duration(wall_s),
             o.out.empty() ? "" : fmt::format("; results in {}", o.out));
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
  for (const std::string& name : eval_suite_names()) {
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

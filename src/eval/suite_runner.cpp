// evaluate_suite (snapkv/eval.h): every case is rendered, prefilled once with the full cache
// (recording what every press needs), then answered greedily with every press at every capacity
// on pressed copies of that cache, decoded together in one batch. The lines of each case are
// appended to <out>/<suite>.jsonl.gz as soon as it is answered; results already there are
// skipped, and a case whose input changed is an error.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "api/impl.h"
#include "engine/sequence.h"
#include "eval/eval_prompt.h"
#include "eval/greedy_answers.h"
#include "eval/recorded_prefill.h"
#include "eval/results_file.h"
#include "eval/shared_prefixes.h"
#include "eval/suite.h"
#include "eval/suite_results.h"
#include "kv/press.h"
#include "ops/attention.h"
#include "util/error.h"
#include "snapkv/timer.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

// Fails now, not after the first case's prefill, when the results cannot be written; creates no
// file (an empty one is not valid gzip).
void check_writable(const std::string& out, const fs::path& path) {
  std::error_code ec;
  fs::create_directories(out, ec);
  const bool existed = fs::exists(path, ec);
  const bool ok = !ec && std::ofstream(path, std::ios::app).good();
  if (!existed) fs::remove(path, ec);
  if (!ok) fail(ErrorKind::kBadFile, "{}: cannot write {} there", out, path.filename().string());
}

// How many leading tokens x and y have in common.
size_t shared_tokens(std::span<const int32_t> x, std::span<const int32_t> y) {
  return static_cast<size_t>(std::mismatch(x.begin(), x.end(), y.begin(), y.end()).first - x.begin());
}

}  // namespace

std::vector<int> eval_capacities(const std::string& press, const std::vector<int>& capacities) {
  return press == "full" ? std::vector<int>{0} : capacities;
}

std::string EvalSuiteOptions::validate() const {
  const std::vector<std::string> names = eval_suite_names();
  if (std::find(names.begin(), names.end(), suite) == names.end()) {
    return fmt::format("unknown evaluation suite '{}' (known: {})", suite, fmt::join(names, ", "));
  }
  if (out.empty()) return fmt::format("no output folder (the folder for {}.jsonl.gz)", suite);
  if (presses.empty()) return "the list of presses is empty";
  if (capacities.empty()) return "the list of capacities is empty";
  if (limit < 0) return fmt::format("the case limit must be 0 (all) or positive, got {}", limit);
  if (max_tokens < 0) return fmt::format("the answer tokens must be 0 (the suite's) or positive, got {}", max_tokens);
  if (speculation.mode == SpecMode::kDraft) return "the evaluation speculates with prompt lookup, not a draft model";
  if (std::string err = speculation.validate(); !err.empty()) return err;
  // Presses and capacities: the fidelity evaluation's checks (names, duplicates, press options).
  FidelityParams fp;
  fp.lengths = {1};
  fp.n_eval = 1;
  fp.presses = presses;
  fp.capacities = capacities;
  fp.kv_type = kv_type;
  fp.base = base;
  return fp.validate();
}

EvalSuiteResult evaluate_suite(const Model& model, const EvalSuiteOptions& o, const EvalSuiteCallbacks& callbacks) {
  if (const std::string err = o.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const fs::path out_path = results_path(o.out, o.suite);
  check_writable(o.out, out_path);
  const std::string placement = placement_name(o.placement);
  const std::string spec = spec_label(o.speculation);
  SuiteResults done = read_suite_results(o.out, o.suite, placement, spec);

  const ModelInfo& info = model.info();
  const Decoder& decoder = *model.impl().decoder;
  const Tokenizer& tokenizer = model.tokenizer();
  const ChatTemplate tmpl = model.pick_chat_template(o.chat_template);
  SuiteParams sp;
  sp.data = resolve_data_dir(o.data);
  sp.lengths = o.lengths;
  sp.tasks = o.tasks;
  sp.limit = o.limit;
  sp.seed = o.seed;
  sp.n_ctx = info.n_ctx_train;
  sp.depths = o.depths;
  sp.needle = o.needle;
  sp.question = o.question;
  sp.needle_answer = o.needle_answer;
  const std::unique_ptr<Suite> suite = make_suite(o.suite, sp);
  const auto render = [&](const EvalCase& c) { return render_eval_prompt(tokenizer, tmpl, c, o.placement); };
  Timer build_t;
  std::vector<EvalCase> cases =
      suite->cases(tokenizer, [&](const EvalCase& c) { return static_cast<int64_t>(render(c).ids.size()); });
  for (EvalCase& c : cases) c.max_tokens = o.max_tokens > 0 ? o.max_tokens : c.max_tokens;
  if (cases.empty()) {
    fail(ErrorKind::kInvalidArgument, "no {} case fits the model's context of {}", o.suite, info.n_ctx_train);
  }

  // One prefill records what every press needs: the widest window, what else they need (PressNeeds).
  int64_t window = 1;
  PressNeeds needs;
  std::map<std::pair<std::string, int>, std::unique_ptr<Press>> presses;
  FidelityParams cells;  // the press of each (press, capacity) cell, as the fidelity evaluation builds it
  cells.base = o.base;
  for (const std::string& p : o.presses) {
    if (p == "full") continue;
    for (int c : o.capacities) {
      auto press = make_press(cells.cell_config(p, c));
      window = std::max<int64_t>(window, press->window());
      needs |= press->needs();
      presses[{p, c}] = std::move(press);
    }
  }
  int cells_total = 0, cells_todo = 0;
  std::set<std::string> ids;
  for (const EvalCase& c : cases) {
    if (!ids.insert(c.id).second) fail(ErrorKind::kInternal, "{}: two cases are named {}", o.suite, c.id);
    for (const std::string& p : o.presses) {
      for (int cap : eval_capacities(p, o.capacities)) {
        ++cells_total;
        cells_todo += done.cells.count(cell_key(c.id, p, cap)) ? 0 : 1;
      }
    }
  }
  if (callbacks.plan) {
    callbacks.plan(EvalSuitePlan{static_cast<int>(cases.size()), build_t.seconds(), cells_total,
                                 cells_total - cells_todo, out_path.string()});
  }

  ThreadPool& pool = model.impl().threads();
  int cells_done = 0;
  Timer run_t;
  const auto progress = [&](const std::string& what) {
    if (callbacks.progress) callbacks.progress(EvalSuiteProgress{what, cells_done, cells_todo, run_t.seconds()});
  };
  // Every prompt, checked against the results already written; the cases still to run, ordered
  // by their tokens so that cases sharing a prefix follow each other.
  std::vector<EvalPrompt> prompts;
  std::vector<size_t> todo;
  for (size_t i = 0; i < cases.size(); ++i) {
    const EvalCase& c = cases[i];
    prompts.push_back(render(c));
    const EvalPrompt& prompt = prompts.back();
    const std::string hash = fnv1a_hex(prompt.ids);
    if (const auto it = done.hashes.find(c.id); it != done.hashes.end() && it->second != hash) {
      fail(ErrorKind::kInvalidArgument,
           "{}: case {} was run on a different input (hash {}, now {}): other data, model, seed or options; use "
           "another output folder",
           out_path.string(), c.id, it->second, hash);
    }
    if (static_cast<int>(prompt.ids.size()) + c.max_tokens > info.n_ctx_train) {
      fail(ErrorKind::kOutOfRange, "case {}: {} prompt tokens and {} answer tokens exceed the context of {}", c.id,
           prompt.ids.size(), c.max_tokens, info.n_ctx_train);
    }
    bool any = false;
    for (const std::string& p : o.presses) {
      for (int cap : eval_capacities(p, o.capacities)) any |= !done.cells.count(cell_key(c.id, p, cap));
    }
    if (any && !o.report_only) todo.push_back(i);
  }
  // The tokens prefilled before the question (all of them unless question-agnostic).
  const auto before = [&](size_t i) { return std::span<const int32_t>(prompts[i].ids).first(prompts[i].split); };
  std::stable_sort(todo.begin(), todo.end(), [&](size_t a, size_t b) {
    const auto x = before(a), y = before(b);
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  });

  // keep[k]: the tokens case k shares with case k + 1. `saved` holds recorded prefills of prefixes
  // of the next case's tokens, shortest first (eval/shared_prefixes.h).
  constexpr size_t kMinSavedGap = 32;  // tokens
  std::vector<size_t> keep(todo.size(), 0);
  for (size_t k = 0; k + 1 < todo.size(); ++k) keep[k] = shared_tokens(before(todo[k]), before(todo[k + 1]));
  std::vector<RecordedPrefill> saved;
  for (size_t k = 0; k < todo.size(); ++k) {
    const EvalCase& c = cases[todo[k]];
    const EvalPrompt& prompt = prompts[todo[k]];
    const std::span<const int32_t> all(prompt.ids), head = before(todo[k]), tail = all.subspan(prompt.split);
    RecordedPrefill state(decoder, o.kv_type, window, needs, pool);
    if (!saved.empty() && saved.back().tokens().size() > keep[k]) {
      state = std::move(saved.back());  // no later case starts from it
      saved.pop_back();
    } else if (!saved.empty()) {
      state = saved.back();
    }
    const size_t reused = state.tokens().size();
    progress(fmt::format("{} prefill ({} of {} tokens)", c.id, head.size() - reused, head.size()));
    Timer pt;
    for (const size_t n : prefixes_to_keep(keep, k, reused, kMinSavedGap)) {
      state.extend(head.subspan(state.tokens().size(), n - state.tokens().size()));
      saved.push_back(state);
    }
    state.extend(head.subspan(state.tokens().size()));
    while (!saved.empty() && saved.back().tokens().size() > keep[k]) saved.pop_back();
    const double prefill_s = pt.seconds();
    const RecordedPrefill& rec = state;
    // A sequence per press and capacity still to run, on a pressed copy of the recorded cache;
    // then all of them answer together.
    struct Cell {
      std::string press;
      int capacity;
      std::unique_ptr<Sequence> seq;
      double press_s;
      size_t kv_kept, kv_full;
    };
    std::vector<Cell> todo_cells;
    for (const std::string& p : o.presses) {
      for (int cap : eval_capacities(p, o.capacities)) {
        if (done.cells.count(cell_key(c.id, p, cap))) continue;
        progress(fmt::format("{} {} C={}", c.id, p, cap));
        Timer st;
        const int n_ctx = static_cast<int>(prompt.ids.size()) + c.max_tokens;
        auto seq = rec.sequence(p == "full" ? nullptr : presses.at({p, cap}).get(), model.impl().press_inputs, n_ctx);
        if (!tail.empty()) seq->prefill(tail, {}, /*compress=*/false);
        const size_t kept = seq->kv().bytes(), full = seq->kv_full_bytes();
        todo_cells.push_back({p, cap, std::move(seq), st.seconds(), kept, full});
      }
    }
    progress(fmt::format("{} answering ({} presses x capacities together)", c.id, todo_cells.size()));
    std::vector<Sequence*> seqs;
    for (const Cell& cell : todo_cells) seqs.push_back(cell.seq.get());
    Timer dt;
    std::vector<GenerateStats> spec_stats(seqs.size());
    const std::vector<std::string> answers = answer_greedily(seqs, tokenizer, c, o.speculation, &spec_stats);
    const double decode_s = dt.seconds() / static_cast<double>(std::max<size_t>(1, todo_cells.size()));
    std::vector<std::string> lines;
    for (size_t i = 0; i < todo_cells.size(); ++i) {
      const Cell& cell = todo_cells[i];
      nlohmann::json j = {{"case", c.id},
                          {"input_hash", fnv1a_hex(prompt.ids)},
                          {"placement", placement},
                          {"press", cell.press},
                          {"capacity", cell.capacity},
                          {"prompt_tokens", prompt.ids.size()},
                          {"answer", answers[i]},
                          {"prefill_s", prefill_s},
                          {"prefill_reused_tokens", reused},
                          {"press_s", cell.press_s},
                          {"decode_s", decode_s},
                          {"decode_batch", todo_cells.size()},
                          {"kv_bytes_kept", cell.kv_kept},
                          {"kv_bytes_full", cell.kv_full},
                          {"model", info.name},
                          {"kv_type", kv_type_name(o.kv_type)},
                          {"seed", o.seed}};
      if (o.speculation.mode != SpecMode::kNone) {
        j["spec"] = spec;
        j["spec_drafted"] = spec_stats[i].n_drafted;
        j["spec_accepted"] = spec_stats[i].n_accepted;
        j["spec_passes"] = spec_stats[i].n_passes;
      }
      j.update(c.meta);
      j.update(suite->score(c, answers[i]));
      lines.push_back(j.dump());
      done.rows.push_back(std::move(j));
    }
    // The case's lines as one gzip member: whole in the file before the next case starts.
    append_result_lines(out_path, lines);
    cells_done += static_cast<int>(lines.size());
  }
  progress("");

  EvalSuiteResult r;
  r.suite = o.suite;
  r.model = info.name;
  r.placement = placement;
  r.score_name = suite->score_name();
  r.score_max = suite->score_max();
  r.heatmap = suite->heatmap();
  for (const nlohmann::json& row : done.rows) {
    if (ids.count(row["case"].get<std::string>())) r.rows.push_back(suite_row(row, r.heatmap));
  }
  r.results_run = cells_done;
  r.results_skipped = cells_total - cells_todo;
  r.results_path = out_path.string();
  return r;
}

}  // namespace snapkv

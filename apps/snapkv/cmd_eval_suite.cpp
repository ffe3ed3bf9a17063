// snapkv eval SUITE (niah, longeval_lines, ruler, longbench, leval): every case is rendered,
// prefilled once with the full cache (recording what every press needs), then answered greedily
// with every press at every capacity on pressed copies of that cache, decoded together in one
// batch. One line per case x press x capacity goes to <out>/<suite>.jsonl (resumable: lines
// already there are skipped, and a case whose input changed is an error); <suite>.md and the SVG
// plots are rewritten at the end.
#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <span>

#include "commands.h"
#include "internal_bridge.h"
#include "snapkv/chat.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "eval/eval_prompt.h"
#include "eval/fidelity.h"
#include "eval/recorded_prefill.h"
#include "eval/shared_prefixes.h"
#include "eval/suite.h"
#include "eval_options.h"
#include "eval_report.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "kv/press.h"
#include "kv_options.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"
#include "snapkv/timer.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

struct SuiteOptions : EvalOptions {
  SuiteOptions() { presses = {"full", "snapkv", "pyramidkv", "ada_kv", "streaming_llm", "h2o"}; }
  std::string suite;
  std::vector<std::string> tasks;
  int limit = 0;
  int max_tokens = 0;  // 0: each case's own
  uint64_t seed = 42;
  std::vector<int> depths;
  std::string needle, question, needle_answer;
  bool question_first = false, question_agnostic = false;
  bool report_only = false;

  QuestionPlacement placement() const {
    return question_first ? QuestionPlacement::kFirst
                          : question_agnostic ? QuestionPlacement::kAgnostic : QuestionPlacement::kEnd;
  }
};

void check_flags(const SuiteOptions& o) {
  const auto bad = [](const std::string& msg) { fail(ErrorKind::kInvalidArgument, "{}", msg); };
  if (o.out.empty()) bad(fmt::format("--out is required (the folder for {}.jsonl)", o.suite));
  if (o.presses.empty()) bad("the list of presses (--presses) is empty");
  if (o.capacities.empty()) bad("the list of capacities (--capacity) is empty");
  if (o.threads < 1 || o.threads > 512) bad("-t must be between 1 and 512");
  if (o.limit < 0) bad(fmt::format("--limit must be 0 (all) or positive, got {}", o.limit));
  if (o.max_tokens < 0) bad(fmt::format("--max-tokens must be 0 (the suite's) or positive, got {}", o.max_tokens));
  if (o.question_first && o.question_agnostic) bad("--question-first and --question-agnostic exclude each other");
  // Presses and capacities: the fidelity evaluation's checks (names, duplicates, press options).
  FidelityParams fp;
  fp.lengths = {1};
  fp.n_eval = 1;
  fp.presses = o.presses;
  fp.capacities = o.capacities;
  const SequenceOptions so = sequence_options(o.kv.session_options());
  fp.kv_type = so.kv_type;
  fp.base = so.press;
  if (const std::string err = fp.validate(); !err.empty()) bad(err);
}

std::string cell_key(const std::string& case_id, const std::string& press, int capacity) {
  return fmt::format("{}|{}|{}", case_id, press, capacity);
}

// Lines already in <suite>.jsonl for this placement, and the input hash of each case there.
struct Done {
  std::vector<nlohmann::json> rows;
  std::set<std::string> cells;
  std::map<std::string, std::string> hashes;
};
Done read_done(const fs::path& path, const std::string& placement) {
  Done d;
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("case") || !j.contains("press") || !j.contains("capacity") ||
        !j.contains("input_hash") || !j.contains("placement") || !j.contains("score")) {
      fail(ErrorKind::kBadFile, "{}:{}: not a result line of snapkv eval", path.string(), n);
    }
    if (j["placement"] != placement) continue;
    const std::string id = j["case"].get<std::string>();
    d.cells.insert(cell_key(id, j["press"].get<std::string>(), j["capacity"].get<int>()));
    d.hashes[id] = j["input_hash"].get<std::string>();
    d.rows.push_back(std::move(j));
  }
  return d;
}

// Greedy answers of sessions decoded together, one batched step per token (the weights are read
// once for all of them): each stops at an end-of-generation token, after max_tokens, or
// (stop_at_newline) at a newline once its answer has text. Returns the answers without
// surrounding whitespace.
std::vector<std::string> answer_greedily(std::span<Sequence* const> sessions, const Tokenizer& tokenizer,
                                         const EvalCase& c) {
  std::vector<std::vector<int32_t>> out(sessions.size());
  std::vector<std::string> text(sessions.size());
  std::vector<size_t> active(sessions.size());
  std::iota(active.begin(), active.end(), size_t{0});
  for (int i = 0; i < c.max_tokens && !active.empty(); ++i) {
    std::vector<size_t> going;
    std::vector<Sequence*> batch;
    std::vector<int32_t> next;
    for (const size_t k : active) {
      const int32_t tok = greedy_token(sessions[k]->logits());
      if (tokenizer.is_eog(tok)) continue;
      if (c.stop_at_newline && text[k].find_first_not_of(" \t\r\n") != std::string::npos &&
          tokenizer.token_piece(tok).find('\n') != std::string::npos) {
        continue;
      }
      out[k].push_back(tok);
      text[k] = tokenizer.decode(out[k]);
      going.push_back(k);
      batch.push_back(sessions[k]);
      next.push_back(tok);
    }
    if (i + 1 < c.max_tokens) Sequence::decode_batch(batch, next);
    active = std::move(going);
  }
  for (std::string& t : text) {
    const size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
    t = b == std::string::npos ? "" : t.substr(b, e - b + 1);
  }
  return text;
}

int run_suite_cmd(const SuiteOptions& o) {
  check_flags(o);
  Timer wall;
  std::error_code ec;
  fs::create_directories(o.out, ec);
  const fs::path jsonl_path = fs::path(o.out) / (o.suite + ".jsonl");
  const std::string placement = placement_name(o.placement());
  Done done = read_done(jsonl_path, placement);
  std::ofstream jsonl(jsonl_path, std::ios::app);
  if (ec || !jsonl) fail(ErrorKind::kBadFile, "{}: cannot write {}.jsonl there (--out)", o.out, o.suite);

  const auto file = GgufFile::open(o.model, file_memory_for(o.model_flags));
  const auto model = load_decoder(*file, decoder_options_for(o.model_flags));
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const ModelHparams& hp = model->hparams();
  const ChatTemplate tmpl = chat_template_from_jinja(file->get_string("tokenizer.chat_template", ""));
  const SequenceOptions so = sequence_options(o.kv.session_options());

  SuiteParams sp;
  sp.data = o.data;
  sp.lengths = o.lengths;
  sp.tasks = o.tasks;
  sp.limit = o.limit;
  sp.seed = o.seed;
  sp.n_ctx = hp.n_ctx_train;
  sp.depths = o.depths;
  sp.needle = o.needle;
  sp.question = o.question;
  sp.needle_answer = o.needle_answer;
  const std::unique_ptr<Suite> suite = make_suite(o.suite, sp);
  const auto render = [&](const EvalCase& c) { return render_eval_prompt(*tokenizer, tmpl, c, o.placement()); };
  Timer build_t;
  std::vector<EvalCase> cases =
      suite->cases(*tokenizer, [&](const EvalCase& c) { return static_cast<int64_t>(render(c).ids.size()); });
  for (EvalCase& c : cases) c.max_tokens = o.max_tokens > 0 ? o.max_tokens : c.max_tokens;
  if (cases.empty()) fail(ErrorKind::kInvalidArgument, "no {} case fits the model's context of {}", o.suite, hp.n_ctx_train);

  // One prefill records what every press needs: the widest window, observed attention for h2o.
  int64_t window = 1;
  bool observed = false;
  std::map<std::pair<std::string, int>, std::unique_ptr<Press>> presses;
  for (const std::string& p : o.presses) {
    if (p == "full") continue;
    for (int c : o.capacities) {
      PressConfig pc = so.press;
      pc.press = p;
      pc.capacity = c;
      pc.ratio = 0;
      pc.recompress = 0;
      auto press = make_press(pc);
      window = std::max<int64_t>(window, press->window());
      observed |= press->needs_observed_attention();
      presses[{p, c}] = std::move(press);
    }
  }
  int cells_total = 0, cells_todo = 0;
  std::set<std::string> ids;
  for (const EvalCase& c : cases) {
    if (!ids.insert(c.id).second) fail(ErrorKind::kInternal, "{}: two cases are named {}", o.suite, c.id);
    for (const std::string& p : o.presses) {
      for (int cap : capacities_of(p, o.capacities)) {
        ++cells_total;
        cells_todo += done.cells.count(cell_key(c.id, p, cap)) ? 0 : 1;
      }
    }
  }
  fmt::print(stderr, "model: {} ({} layers), {} threads; {}: {} cases built in {}, {}; {} results, {} already in {}\n",
             hp.name, hp.n_layer, o.threads, o.suite, cases.size(), format_duration(build_t.seconds()), placement,
             cells_total, cells_total - cells_todo, jsonl_path.string());

  ThreadPool pool(o.threads);
  SequenceOptions full_opts;
  full_opts.kv_type = so.kv_type;
  int cells_done = 0;
  Timer run_t;
  const auto progress = [&](const std::string& what) {
    const double el = run_t.seconds();
    const double eta = cells_done ? el / cells_done * (cells_todo - cells_done) : 0;
    const int width = 30, fill = cells_todo ? width * cells_done / cells_todo : width;
    fmt::print(stderr, "\r[{}{}] {}/{} {} elapsed {} ETA {}   ", std::string(static_cast<size_t>(fill), '#'),
               std::string(static_cast<size_t>(width - fill), '.'), cells_done, cells_todo, what, format_duration(el),
               cells_done ? format_duration(eta) : "?");
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
           "another --out",
           jsonl_path.string(), c.id, it->second, hash);
    }
    if (static_cast<int>(prompt.ids.size()) + c.max_tokens > hp.n_ctx_train) {
      fail(ErrorKind::kOutOfRange, "case {}: {} prompt tokens and {} answer tokens exceed the context of {}", c.id,
           prompt.ids.size(), c.max_tokens, hp.n_ctx_train);
    }
    bool any = false;
    for (const std::string& p : o.presses) {
      for (int cap : capacities_of(p, o.capacities)) any |= !done.cells.count(cell_key(c.id, p, cap));
    }
    if (any && !o.report_only) todo.push_back(i);
  }
  // The tokens prefilled before the question (all of them unless question-agnostic).
  const auto before = [&](size_t i) {
    return std::span<const int32_t>(prompts[i].ids).first(prompts[i].split);
  };
  std::stable_sort(todo.begin(), todo.end(), [&](size_t a, size_t b) {
    const auto x = before(a), y = before(b);
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  });
  const auto shared = [](std::span<const int32_t> x, std::span<const int32_t> y) {
    return static_cast<size_t>(std::mismatch(x.begin(), x.end(), y.begin(), y.end()).first - x.begin());
  };

  // keep[k]: the tokens case k shares with case k + 1. `saved` holds recorded prefills of prefixes
  // of the next case's tokens, shortest first (eval/shared_prefixes.h).
  constexpr size_t kMinSavedGap = 32;  // tokens
  std::vector<size_t> keep(todo.size(), 0);
  for (size_t k = 0; k + 1 < todo.size(); ++k) keep[k] = shared(before(todo[k]), before(todo[k + 1]));
  std::vector<RecordedPrefill> saved;
  for (size_t k = 0; k < todo.size(); ++k) {
    const EvalCase& c = cases[todo[k]];
    const EvalPrompt& prompt = prompts[todo[k]];
    const std::span<const int32_t> all(prompt.ids), head = before(todo[k]), tail = all.subspan(prompt.split);
    RecordedPrefill state(*model, so.kv_type, window, observed, pool);
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
    // A session per press and capacity still to run, on a pressed copy of the recorded cache;
    // then all of them answer together.
    struct Cell {
      std::string press;
      int capacity;
      std::unique_ptr<Sequence> session;
      double press_s;
      size_t kv_kept, kv_full;
    };
    std::vector<Cell> todo_cells;
    for (const std::string& p : o.presses) {
      for (int cap : capacities_of(p, o.capacities)) {
        if (done.cells.count(cell_key(c.id, p, cap))) continue;
        progress(fmt::format("{} {} C={}", c.id, p, cap));
        Timer st;
        const int n_ctx = static_cast<int>(prompt.ids.size()) + c.max_tokens;
        auto session = std::make_unique<Sequence>(*model, n_ctx, pool, full_opts);
        session->adopt(p == "full" ? rec.full() : rec.pressed(*presses.at({p, cap})), head, rec.last_logits());
        if (!tail.empty()) session->prefill(tail, {}, /*compress=*/false);
        const size_t kept = session->kv().bytes(), full = session->kv_full_bytes();
        todo_cells.push_back({p, cap, std::move(session), st.seconds(), kept, full});
      }
    }
    progress(fmt::format("{} answering ({} presses x capacities together)", c.id, todo_cells.size()));
    std::vector<Sequence*> sessions;
    for (const Cell& cell : todo_cells) sessions.push_back(cell.session.get());
    Timer dt;
    const std::vector<std::string> answers = answer_greedily(sessions, *tokenizer, c);
    const double decode_s = dt.seconds() / static_cast<double>(std::max<size_t>(1, todo_cells.size()));
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
                          {"model", hp.name},
                          {"kv_type", kv_type_name(so.kv_type)},
                          {"seed", o.seed}};
      j.update(c.meta);
      j.update(suite->score(c, answers[i]));
      jsonl << j.dump() << "\n" << std::flush;
      if (!jsonl) fail(ErrorKind::kBadFile, "{}: writing failed", jsonl_path.string());
      done.rows.push_back(std::move(j));
      ++cells_done;
    }
  }
  progress("");
  fmt::print(stderr, "\n");
  std::vector<nlohmann::json> rows;
  for (nlohmann::json& r : done.rows) {
    if (ids.count(r["case"].get<std::string>())) rows.push_back(std::move(r));
  }
  EvalReport report{o.suite, hp.name, suite->score_name(), placement, suite->score_max(), suite->heatmap(),
                    o.presses, o.capacities, o.out};
  fmt::print("{}", write_eval_report(report, rows));
  std::fflush(stdout);
  fmt::print(stderr, "done: {} results run, {} skipped, in {} (wall, model load included); results in {}\n", cells_done,
             cells_total - cells_todo, format_duration(wall.seconds()), o.out);
  return 0;
}

}  // namespace

Action add_eval_suite(CLI::App& app, const std::string& suite) {
  auto o = std::make_shared<SuiteOptions>();
  o->suite = suite;
  add_eval_options(app, *o, "prompt lengths in tokens (answer included), comma-separated; default: the suite's",
                   fmt::format("folder for {0}.jsonl (resumable), {0}.md and {0}_*.svg", suite));
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

// snapkv eval niah: needle in a haystack over lengths x depths, every press at every capacity on
// one recorded prefill per case, greedy answers scored by ROUGE-1 F x 10 and needle-word recall.
// Results go to <out>/niah.jsonl (resumable: cells already there are skipped), niah.md and one
// SVG heatmap per press and capacity.
#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "commands.h"
#include "eval_options.h"
#include "engine/chat_template.h"
#include "engine/session.h"
#include "eval/fidelity.h"
#include "eval/niah.h"
#include "eval/recorded_prefill.h"
#include "io/gguf.h"
#include "io/tokenizer.h"
#include "kv/press.h"
#include "kv_options.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"
#include "util/timer.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

struct NiahOptions : EvalOptions {
  NiahOptions() {
    lengths = {1024, 2048, 4096, 7168};
    presses = {"full", "snapkv", "pyramidkv", "ada_kv", "streaming_llm", "h2o"};
  }
  std::vector<int> depths = {0, 25, 50, 75, 100};
  std::string needle = kNiahNeedle;
  std::string question = kNiahQuestion;
  int max_tokens = 32;
};

std::string case_id(int length, int depth) { return fmt::format("L{}_d{}", length, depth); }
std::string cell_key(const std::string& id, const std::string& press, int capacity) {
  return fmt::format("{}|{}|{}", id, press, capacity);
}
// "full" runs once per case, recorded with capacity 0.
std::vector<int> capacities_of(const std::string& press, const std::vector<int>& caps) {
  return press == "full" ? std::vector<int>{0} : caps;
}

void check_flags(const NiahOptions& o, int n_ctx) {
  const auto bad = [](const std::string& msg) { fail(ErrorKind::kInvalidArgument, "{}", msg); };
  if (o.lengths.empty()) bad("the list of lengths (--lengths) is empty");
  if (o.depths.empty()) bad("the list of depths (--depths) is empty");
  if (o.presses.empty()) bad("the list of presses (--presses) is empty");
  if (o.capacities.empty()) bad("the list of capacities (--capacity) is empty");
  if (o.threads < 1 || o.threads > 512) bad("-t must be between 1 and 512");
  if (o.max_tokens < 1) bad(fmt::format("--max-tokens must be positive, got {}", o.max_tokens));
  if (o.needle.empty() || o.question.empty()) bad("--needle and --question must not be empty");
  for (int d : o.depths) {
    if (d < 0 || d > 100) bad(fmt::format("depth {} is outside [0, 100] (--depths, in percent)", d));
  }
  for (int l : o.lengths) {
    if (l < 64) bad(fmt::format("length {} is too short (--lengths, at least 64 tokens)", l));
    if (n_ctx > 0 && l + o.max_tokens > n_ctx) {
      bad(fmt::format("length {} plus {} answer tokens exceeds the model's context of {}", l, o.max_tokens, n_ctx));
    }
  }
  // Presses and capacities: the fidelity evaluation's checks (names, duplicates, press options).
  FidelityParams fp;
  fp.lengths = {1};
  fp.n_eval = 1;
  fp.presses = o.presses;
  fp.capacities = o.capacities;
  const SessionOptions so = o.kv.session_options();
  fp.kv_type = so.kv_type;
  fp.base = so.press;
  if (const std::string err = fp.validate(); !err.empty()) bad(err);
}

// Colour from red (0) through yellow (5) to green (10).
std::string heat_colour(double score) {
  const double t = std::clamp(score / 10.0, 0.0, 1.0);
  const int r = t < 0.5 ? 220 : static_cast<int>(220 - (t - 0.5) * 2 * 180);
  const int g = t < 0.5 ? static_cast<int>(60 + t * 2 * 160) : 220 - static_cast<int>((t - 0.5) * 2 * 40);
  return fmt::format("#{:02x}{:02x}{:02x}", r, g, 60);
}

std::string heatmap_svg(const std::string& title, const std::vector<int>& lengths, const std::vector<int>& depths,
                        const std::map<std::pair<int, int>, double>& score) {
  const int cw = 64, ch = 28, left = 70, top = 40;
  const int w = left + cw * static_cast<int>(lengths.size()) + 10, h = top + ch * static_cast<int>(depths.size()) + 30;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>\n"
      "<text x=\"4\" y=\"32\">depth % \\ length</text>\n",
      w, h, title);
  for (size_t i = 0; i < lengths.size(); ++i) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + cw * i + cw / 2,
                     top + ch * depths.size() + 18, lengths[i]);
  }
  for (size_t j = 0; j < depths.size(); ++j) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, top + ch * j + ch / 2 + 4,
                     depths[j]);
    for (size_t i = 0; i < lengths.size(); ++i) {
      const auto it = score.find({lengths[i], depths[j]});
      const std::string fill = it == score.end() ? "#dddddd" : heat_colour(it->second);
      const std::string text = it == score.end() ? "-" : fmt::format("{:.1f}", it->second);
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\"/>"
          "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
          left + cw * i, top + ch * j, cw, ch, fill, left + cw * i + cw / 2, top + ch * j + ch / 2 + 4, text);
    }
  }
  return s + "</svg>\n";
}

// niah.md and the SVGs from every line of niah.jsonl that belongs to this grid.
void write_reports(const NiahOptions& o, const std::vector<nlohmann::json>& rows, const std::string& model_name) {
  std::map<std::string, std::map<std::pair<int, int>, double>> rouge, recall;  // "press|C" -> (L, depth)
  for (const nlohmann::json& r : rows) {
    const std::string k = fmt::format("{}|{}", r["press"].get<std::string>(), r["capacity"].get<int>());
    rouge[k][{r["length"].get<int>(), r["depth"].get<int>()}] = r["rouge1_f10"].get<double>();
    recall[k][{r["length"].get<int>(), r["depth"].get<int>()}] = r["needle_recall"].get<double>();
  }
  const auto mean = [&](const std::map<std::pair<int, int>, double>& m, int* n) {
    double s = 0;
    *n = 0;
    for (int l : o.lengths) {
      for (int d : o.depths) {
        const auto it = m.find({l, d});
        if (it != m.end()) s += it->second, ++*n;
      }
    }
    return *n ? s / *n : 0.0;
  };
  int n_full = 0;
  const double full_mean = mean(rouge["full|0"], &n_full);
  std::string md = fmt::format(
      "Needle in a haystack, model {}: {} lengths x {} depths; greedy answers of at most {} tokens. Score: ROUGE-1 "
      "F(needle, answer) x 10; recall: share of the needle's content words in the answer. C = entries kept per KV "
      "head.\n\n| press | C | cases | ROUGE-1 x10 | vs full | needle-word recall |\n|---|---:|---:|---:|---:|---:|\n",
      model_name, o.lengths.size(), o.depths.size(), o.max_tokens);
  for (const std::string& p : o.presses) {
    for (int c : capacities_of(p, o.capacities)) {
      const std::string k = fmt::format("{}|{}", p, c);
      int n = 0, nr = 0;
      const double m = mean(rouge[k], &n), mr = mean(recall[k], &nr);
      md += fmt::format("| {} | {} | {} | {:.2f} | {} | {:.2f} |\n", p, c == 0 ? "-" : std::to_string(c), n, m,
                        n_full && full_mean > 0 ? fmt::format("{:.0f} %", 100 * m / full_mean) : "-", mr);
    }
  }
  for (const std::string& p : o.presses) {
    for (int c : capacities_of(p, o.capacities)) {
      const auto& m = rouge[fmt::format("{}|{}", p, c)];
      const std::string title = c == 0 ? p : fmt::format("{} C={}", p, c);
      md += fmt::format("\n### {} (ROUGE-1 x10; rows depth %, columns length)\n\n| depth |", title);
      for (int l : o.lengths) md += fmt::format(" {} |", l);
      md += "\n|---:|";
      for (size_t i = 0; i < o.lengths.size(); ++i) md += "---:|";
      md += "\n";
      for (int d : o.depths) {
        md += fmt::format("| {} |", d);
        for (int l : o.lengths) {
          const auto it = m.find({l, d});
          md += it == m.end() ? " - |" : fmt::format(" {:.1f} |", it->second);
        }
        md += "\n";
      }
      const std::string svg_name = c == 0 ? fmt::format("niah_{}.svg", p) : fmt::format("niah_{}_{}.svg", p, c);
      std::ofstream svg(fs::path(o.out) / svg_name, std::ios::trunc);
      svg << heatmap_svg(fmt::format("NIAH {} - {} (ROUGE-1 x10)", model_name, title), o.lengths, o.depths, m);
    }
  }
  fmt::print("{}", md);
  std::fflush(stdout);
  std::ofstream mdf(fs::path(o.out) / "niah.md", std::ios::trunc);
  mdf << md;
  if (!mdf) fail(ErrorKind::kBadFile, "{}: writing niah.md failed", o.out);
}

int run_niah_cmd(const NiahOptions& o) {
  check_flags(o, 0);
  if (o.out.empty()) fail(ErrorKind::kInvalidArgument, "--out is required (the folder for niah.jsonl)");
  std::error_code ec;
  fs::create_directories(o.out, ec);
  const fs::path jsonl_path = fs::path(o.out) / "niah.jsonl";
  // Resume: cells already in niah.jsonl are skipped.
  std::vector<nlohmann::json> rows;
  std::set<std::string> done;
  if (fs::exists(jsonl_path)) {
    std::ifstream in(jsonl_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("case") || !j.contains("press") || !j.contains("capacity")) {
        fail(ErrorKind::kBadFile, "{}: a line is not a result of snapkv eval niah", jsonl_path.string());
      }
      done.insert(cell_key(j["case"].get<std::string>(), j["press"].get<std::string>(), j["capacity"].get<int>()));
      rows.push_back(std::move(j));
    }
  }
  std::ofstream jsonl(jsonl_path, std::ios::app);
  if (ec || !jsonl) fail(ErrorKind::kBadFile, "{}: cannot write niah.jsonl there (--out)", o.out);

  Timer wall;
  size_t n_files = 0;
  const std::string essays = read_paul_graham_essays(o.data, &n_files);
  const auto file = GgufFile::open(o.model);
  const auto model = load_model(*file);
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const ModelHparams& hp = model->hparams();
  check_flags(o, hp.n_ctx_train);
  const ChatTemplate tmpl = chat_template_from_jinja(file->get_string("tokenizer.chat_template", ""));
  const SessionOptions so = o.kv.session_options();

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
  for (int l : o.lengths) {
    for (int d : o.depths) {
      for (const std::string& p : o.presses) {
        for (int c : capacities_of(p, o.capacities)) {
          ++cells_total;
          cells_todo += done.count(cell_key(case_id(l, d), p, c)) ? 0 : 1;
        }
      }
    }
  }
  fmt::print(stderr, "model: {} ({} layers), {} threads; {} cells, {} already in {}\n", hp.name, hp.n_layer,
             o.threads, cells_total, cells_total - cells_todo, jsonl_path.string());

  ThreadPool pool(o.threads);
  SessionOptions full_opts;
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
  for (int l : o.lengths) {
    for (int d : o.depths) {
      const std::string id = case_id(l, d);
      bool any = false;
      for (const std::string& p : o.presses) {
        for (int c : capacities_of(p, o.capacities)) any |= !done.count(cell_key(id, p, c));
      }
      if (!any) continue;
      progress(id + " prefill");
      const NiahPrompt prompt = build_niah_prompt(*tokenizer, tmpl, essays, l, d, o.needle, o.question);
      const std::string hash = fnv1a_hex(prompt.ids);
      Timer pt;
      const RecordedPrefill rec(*model, prompt.ids, so.kv_type, window, observed, pool);
      const double prefill_s = pt.seconds();
      const size_t full_bytes = rec.full().bytes();
      const int n_ctx = static_cast<int>(prompt.ids.size()) + o.max_tokens;
      for (const std::string& p : o.presses) {
        for (int c : capacities_of(p, o.capacities)) {
          if (done.count(cell_key(id, p, c))) continue;
          progress(fmt::format("{} {} C={}", id, p, c));
          Timer dt;
          KvCache cache = p == "full" ? rec.full() : rec.pressed(*presses.at({p, c}));
          const size_t kept_bytes = cache.bytes();
          Session session(*model, n_ctx, pool, full_opts);
          session.adopt(std::move(cache), prompt.ids, rec.last_logits());
          // Greedy; stop at an end-of-generation token, or at a newline once the answer has text.
          std::vector<int32_t> out;
          std::string text;
          for (int i = 0; i < o.max_tokens; ++i) {
            const std::span<const float> lg = session.logits();
            const auto id_tok = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
            if (tokenizer->is_eog(id_tok)) break;
            const std::string piece = tokenizer->token_piece(id_tok);
            const bool has_text = text.find_first_not_of(" \t\r\n") != std::string::npos;
            if (has_text && piece.find('\n') != std::string::npos) break;
            out.push_back(id_tok);
            text = tokenizer->decode(out);
            if (i + 1 < o.max_tokens) session.decode(id_tok);
          }
          const size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
          const std::string answer = b == std::string::npos ? "" : text.substr(b, e - b + 1);
          const double decode_s = dt.seconds();
          nlohmann::json j = {
              {"case", id},
              {"length", l},
              {"depth", d},
              {"prompt_tokens", prompt.ids.size()},
              {"needle_at", prompt.needle_at},
              {"input_hash", hash},
              {"press", p},
              {"capacity", c},
              {"answer", answer},
              {"rouge1_f10", 10 * rouge1_f(o.needle, answer)},
              {"needle_recall", needle_word_recall(o.needle, answer)},
              {"prefill_s", prefill_s},
              {"decode_s", decode_s},
              {"kv_bytes_kept", kept_bytes},
              {"kv_bytes_full", full_bytes},
              {"model", hp.name},
              {"kv_type", kv_type_name(so.kv_type)},
          };
          jsonl << j.dump() << "\n" << std::flush;
          if (!jsonl) fail(ErrorKind::kBadFile, "{}: writing failed", jsonl_path.string());
          rows.push_back(std::move(j));
          ++cells_done;
        }
      }
    }
  }
  progress("");
  fmt::print(stderr, "\n");
  write_reports(o, rows, hp.name);
  fmt::print(stderr, "done: {} cells run, {} skipped, in {} (wall, model load included); results in {}\n", cells_done,
             cells_total - cells_todo, format_duration(wall.seconds()), o.out);
  return 0;
}

}  // namespace

Action add_eval_niah(CLI::App& app) {
  auto o = std::make_shared<NiahOptions>();
  add_eval_options(app, *o, "context lengths in tokens, comma-separated",
                   "folder for niah.jsonl (resumable), niah.md and niah_*.svg");
  app.get_option("--out")->required();
  app.add_option("--depths", o->depths, "needle depths in percent, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--needle", o->needle, "the needle sentence")->capture_default_str();
  app.add_option("--question", o->question, "the question asked after the document")->capture_default_str();
  app.add_option("--max-tokens", o->max_tokens, "most answer tokens (greedy)")->capture_default_str();
  return [o] { return run_niah_cmd(*o); };
}

}  // namespace snapkv::cli

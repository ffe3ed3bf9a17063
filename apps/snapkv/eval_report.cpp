#include "eval_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "svg_chart.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

struct Mean {
  double sum = 0;
  int n = 0;
  void add(double v) { sum += v, ++n; }
  double value() const { return n ? sum / n : 0; }
};

std::string label(const std::string& press, int c) { return c == 0 ? press : fmt::format("{} C={}", press, c); }

// Red (0) through yellow to green (score_max).
std::string heat_colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const int r = t < 0.5 ? 220 : static_cast<int>(220 - (t - 0.5) * 2 * 180);
  const int g = t < 0.5 ? static_cast<int>(60 + t * 2 * 160) : 220 - static_cast<int>((t - 0.5) * 2 * 40);
  return fmt::format("#{:02x}{:02x}{:02x}", r, g, 60);
}

using Grid = std::map<std::pair<int, int>, Mean>;  // (column, row) -> mean score

std::string heatmap_svg(const std::string& title, const std::string& axes, const std::vector<int>& cols,
                        const std::vector<int>& rows, const Grid& grid, double score_max) {
  const int cw = 64, ch = 28, left = 70, top = 40;
  const int w = left + cw * static_cast<int>(cols.size()) + 10, h = top + ch * static_cast<int>(rows.size()) + 30;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>\n<text x=\"4\" y=\"32\">{}</text>\n",
      std::max(w, 360), h, title, axes);
  for (size_t i = 0; i < cols.size(); ++i) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + cw * i + cw / 2,
                     top + ch * rows.size() + 18, cols[i]);
  }
  for (size_t j = 0; j < rows.size(); ++j) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, top + ch * j + ch / 2 + 4,
                     rows[j]);
    for (size_t i = 0; i < cols.size(); ++i) {
      const auto it = grid.find({cols[i], rows[j]});
      const bool have = it != grid.end();
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\"/>"
          "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
          left + cw * i, top + ch * j, cw, ch, have ? heat_colour(it->second.value() / score_max) : "#dddddd",
          left + cw * i + cw / 2, top + ch * j + ch / 2 + 4, have ? fmt::format("{:.1f}", it->second.value()) : "-");
    }
  }
  return s + "</svg>\n";
}

// Mean score against capacity, one line per press; presses without a capacity as dashed levels.
std::string budget_svg(const EvalSuiteResult& r, const std::vector<std::string>& presses,
                       const std::vector<int>& capacities, const std::map<std::string, Mean>& means) {
  std::vector<std::string> x;
  for (int c : capacities) x.push_back(std::to_string(c));
  std::vector<ChartSeries> series;
  for (const std::string& press : presses) {
    ChartSeries line{press, {}, press == "full"};
    bool any = false;
    for (int c : capacities) {
      const auto it = means.find(label(press, press == "full" ? 0 : c));
      any |= it != means.end();
      line.y.push_back(it == means.end() ? std::nan("") : it->second.value());
    }
    if (any) series.push_back(std::move(line));
  }
  return line_chart_svg(fmt::format("{} {} ({}): {} vs KV capacity per head", r.suite, r.model, r.placement, r.score_name),
                        "capacity C (entries per KV head)", r.score_name, x, series, r.score_max);
}

}  // namespace

std::string write_eval_report(const EvalSuiteResult& r, const std::vector<std::string>& presses,
                              const std::vector<int>& capacities, const std::string& out) {
  std::map<std::string, Mean> means, kv_kept, decode_s;    // "press C=.." -> ...
  std::map<std::string, std::map<std::string, Mean>> by_task;  // label -> task -> mean
  std::map<std::string, std::map<std::string, Mean>> by_case;  // label -> case -> mean
  std::map<std::string, Grid> grids;                        // label -> heatmap
  std::set<std::string> tasks;
  std::set<int> cols, grid_rows;
  std::set<std::string> cases;
  for (const EvalSuiteRow& row : r.rows) {
    const std::string l = label(row.press, row.capacity);
    cases.insert(row.case_id);
    means[l].add(row.score);
    kv_kept[l].add(row.kv_kept);
    decode_s[l].add(row.decode_s);
    tasks.insert(row.task);
    by_task[l][row.task].add(row.score);
    by_case[l][row.case_id].add(row.score);
    if (row.heat) {
      const auto [cv, rv] = *row.heat;
      cols.insert(cv), grid_rows.insert(rv);
      grids[l][{cv, rv}].add(row.score);
    }
  }
  // Over the cases both have, so that a stopped run's partial configuration is compared fairly.
  const auto vs_full = [&](const std::string& l) {
    const auto full = by_case.find("full");
    if (full == by_case.end()) return std::string("-");
    Mean mine, theirs;
    for (const auto& [id, m] : by_case[l]) {
      const auto it = full->second.find(id);
      if (it != full->second.end()) mine.add(m.value()), theirs.add(it->second.value());
    }
    return theirs.n && theirs.value() > 0 ? fmt::format("{:.0f} %", 100 * mine.value() / theirs.value())
                                          : std::string("-");
  };
  std::string md = fmt::format(
      "`snapkv eval {}`, model {}, {}: {} cases; score: {} (best {:g}). C = KV entries kept per KV head; KV kept = "
      "bytes of the compressed cache over the full one, when decoding starts; decode s = seconds per answer (the "
      "answers of a case decode in one batch and share its time); 95 % CI: of the mean score, bootstrap over the "
      "cases; vs full: over the cases both have.\n\n"
      "| press | C | results | score | 95 % CI | vs full | KV kept | decode s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
      r.suite, r.model, r.placement, cases.size(), r.score_name, r.score_max);
  for (const std::string& p : presses) {
    for (int c : eval_capacities(p, capacities)) {
      const std::string l = label(p, c);
      if (!means.count(l)) continue;
      std::vector<double> per_case;
      for (const auto& [id, m] : by_case[l]) per_case.push_back(m.value());
      const MeanInterval ci = bootstrap_mean_interval(per_case);
      md += fmt::format("| {} | {} | {} | {:.2f} | {:.2f}–{:.2f} | {} | {:.1f} % | {:.2f} |\n", p,
                        c ? std::to_string(c) : "-", means[l].n, means[l].value(), ci.lo, ci.hi,
                        vs_full(l), 100 * kv_kept[l].value(), decode_s[l].value());
    }
  }
  if (tasks.size() > 1) {
    md += "\n### Score per task\n\n| press | C |";
    for (const std::string& t : tasks) md += fmt::format(" {} |", t);
    md += "\n|---|---:|";
    for (size_t i = 0; i < tasks.size(); ++i) md += "---:|";
    md += "\n";
    for (const std::string& p : presses) {
      for (int c : eval_capacities(p, capacities)) {
        const std::string l = label(p, c);
        if (!by_task.count(l)) continue;
        md += fmt::format("| {} | {} |", p, c ? std::to_string(c) : "-");
        for (const std::string& t : tasks) {
          const auto it = by_task[l].find(t);
          md += it == by_task[l].end() ? " - |" : fmt::format(" {:.1f} |", it->second.value());
        }
        md += "\n";
      }
    }
  }
  const std::vector<int> col_v(cols.begin(), cols.end()), row_v(grid_rows.begin(), grid_rows.end());
  for (const std::string& p : presses) {
    for (int c : eval_capacities(p, capacities)) {
      const std::string l = label(p, c);
      if (!grids.count(l)) continue;
      const Grid& g = grids[l];
      md += fmt::format("\n### {} (rows {}, columns {})\n\n| {} |", l, r.heatmap.second, r.heatmap.first,
                        r.heatmap.second);
      for (int cv : col_v) md += fmt::format(" {} |", cv);
      md += "\n|---:|";
      for (size_t i = 0; i < col_v.size(); ++i) md += "---:|";
      md += "\n";
      for (int rv : row_v) {
        md += fmt::format("| {} |", rv);
        for (int cv : col_v) {
          const auto it = g.find({cv, rv});
          md += it == g.end() ? " - |" : fmt::format(" {:.1f} |", it->second.value());
        }
        md += "\n";
      }
      const std::string svg = c ? fmt::format("{}_{}_{}.svg", r.suite, p, c) : fmt::format("{}_{}.svg", r.suite, p);
      write_text_file(fs::path(out) / svg,
                 heatmap_svg(fmt::format("{} {} - {} ({})", r.suite, r.model, l, r.score_name),
                             fmt::format("{} \\ {}", r.heatmap.second, r.heatmap.first), col_v, row_v, g, r.score_max));
    }
  }
  write_text_file(fs::path(out) / (r.suite + "_budget.svg"), budget_svg(r, presses, capacities, means));
  write_text_file(fs::path(out) / (r.suite + ".md"), md);
  return md;
}

}  // namespace snapkv::cli

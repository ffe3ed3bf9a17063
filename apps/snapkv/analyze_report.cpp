#include "analyze_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "png_image.h"
#include "svg_chart.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

namespace fs = std::filesystem;

// Layer numbers as x labels, every fifth written (30 layers do not fit otherwise).
std::vector<std::string> layer_labels(int n_layer) {
  std::vector<std::string> x;
  for (int il = 0; il < n_layer; ++il) x.push_back(il % 5 == 0 || il == n_layer - 1 ? std::to_string(il) : "");
  return x;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    s += x;
    ++n;
  }
  return n ? s / n : std::nan("");
}

std::string pct(double v) { return std::isnan(v) ? "-" : fmt::format("{:.1f} %", 100 * v); }

void write_file(const std::string& out, const std::string& name, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(out, ec);
  write_text_file(fs::path(out) / name, bytes);
}

}  // namespace

nlohmann::json hit_rate_json(const HitRateResult& r, const HitRateOptions& o) {
  nlohmann::json j = {{"model", r.model},
                      {"n_layer", r.n_layer},
                      {"window", o.window},
                      {"top_p", o.top_p},
                      {"theta", o.theta},
                      {"gen_windows", o.gen_windows},
                      {"gen_window_size", o.gen_window_size},
                      {"cases", nlohmann::json::array()},
                      {"mean", nlohmann::json::object()}};
  for (const HitRateCase& c : r.cases) {
    j["cases"].push_back({{"id", c.id},
                          {"placement", c.placement},
                          {"prompt_tokens", c.prompt_tokens},
                          {"generated", c.generated},
                          {"hit_rate", c.hit_rate},
                          {"significant", c.significant}});
  }
  for (const QuestionPlacement p : o.placements) {
    const std::string name = placement_name(p);
    nlohmann::json m = {{"all_windows", r.mean(name)}, {"per_window", nlohmann::json::array()}};
    for (int w = 0; w < o.gen_windows; ++w) m["per_window"].push_back(r.mean(name, w));
    j["mean"][name] = m;
  }
  return j;
}

std::string write_hit_rate_plots(const HitRateResult& r, const HitRateOptions& o, const std::string& out) {
  std::string md = fmt::format("# Hit rate, {} ({} cases; window {}, top p {}, theta {})\n\n", r.model,
                               r.cases.size() / o.placements.size(), o.window, o.top_p, o.theta);
  md += "| question | generated tokens | hit rate, mean over layers | lowest layer |\n|---|---|--:|--:|\n";
  for (const QuestionPlacement p : o.placements) {
    const std::string name = placement_name(p);
    std::vector<ChartSeries> series;
    for (int w = 0; w < o.gen_windows; ++w) {
      const std::vector<double> m = r.mean(name, w);
      const std::string tokens = fmt::format("{}-{}", w * o.gen_window_size + 1, (w + 1) * o.gen_window_size);
      series.push_back({"tokens " + tokens, m});
      const auto low = std::min_element(m.begin(), m.end(), [](double a, double b) {
        return !std::isnan(a) && (std::isnan(b) || a < b);
      });
      md += fmt::format("| {} | {} | {} | {} |\n", name, tokens, pct(mean_of(m)),
                        low == m.end() || std::isnan(*low) ? "-" : fmt::format("{} ({})", low - m.begin(), pct(*low)));
    }
    write_file(out, fmt::format("hit_rate_{}.svg", name),
               line_chart_svg(fmt::format("{}: hit rate per layer ({})", r.model, name), "layer", "hit rate",
                              layer_labels(r.n_layer), series, 1.0));
  }
  if (o.placements.size() > 1) {
    std::vector<ChartSeries> series;
    for (const QuestionPlacement p : o.placements) series.push_back({placement_name(p), r.mean(placement_name(p))});
    write_file(out, "hit_rate_question_position.svg",
               line_chart_svg(fmt::format("{}: hit rate per layer by question position", r.model), "layer",
                              "hit rate", layer_labels(r.n_layer), series, 1.0));
  }
  return md;
}

nlohmann::json overlap_json(const OverlapResult& r, const OverlapOptions& o) {
  nlohmann::json j = {{"model", r.model},         {"n_layer", r.n_layer},  {"top_p", o.top_p},
                      {"answer_tokens", o.answer_tokens}, {"chance", r.chance}, {"mean", r.mean()},
                      {"documents", nlohmann::json::array()}};
  for (const OverlapDocument& d : r.documents) {
    j["documents"].push_back({{"id", d.id},
                              {"context_tokens", d.context_tokens},
                              {"questions", d.questions},
                              {"overlap", d.overlap}});
  }
  return j;
}

std::string write_overlap_plot(const OverlapResult& r, const std::string& out) {
  const std::vector<double> m = r.mean();
  std::vector<ChartSeries> series = {{"mean", m}};
  for (const OverlapDocument& d : r.documents) {
    if (series.size() < 6) series.push_back({d.id, d.overlap, true});
  }
  series.push_back({"chance", std::vector<double>(r.n_layer, r.chance), true});
  write_file(out, "overlap.svg",
             line_chart_svg(fmt::format("{}: overlap of the votes of two questions", r.model), "layer",
                            "H(vote A, vote B)", layer_labels(r.n_layer), series, 1.0));
  size_t questions = 0;
  for (const OverlapDocument& d : r.documents) questions += d.questions.size();
  return fmt::format(
      "# Overlap between questions, {} ({} documents, {} questions)\n\n| layers | overlap | chance |\n|---|--:|--:|\n"
      "| all | {} | {} |\n| first half | {} | |\n| second half | {} | |\n",
      r.model, r.documents.size(), questions, pct(mean_of(m)), pct(r.chance),
      pct(mean_of({m.begin(), m.begin() + r.n_layer / 2})), pct(mean_of({m.begin() + r.n_layer / 2, m.end()})));
}

nlohmann::json pooling_json(const PoolingResult& r, const PoolingOptions& o) {
  nlohmann::json j = {{"model", r.model},           {"press", o.press.describe()}, {"score_name", r.score_name},
                      {"score_max", r.score_max},   {"kernels", o.kernels},        {"capacities", o.capacities},
                      {"cells", nlohmann::json::array()}};
  for (const PoolingCell& c : r.cells) {
    j["cells"].push_back({{"case", c.case_id},
                          {"kernel", c.kernel},
                          {"capacity", c.capacity},
                          {"answer", c.answer},
                          {"score", c.score},
                          {"answer_tokens", c.answer_tokens},
                          {"answer_kept", c.answer_kept},
                          {"answer_whole", c.answer_whole}});
  }
  return j;
}

std::string write_pooling_plots(const PoolingResult& r, const PoolingOptions& o, const std::string& out) {
  std::vector<std::string> x;
  for (const int c : o.capacities) x.push_back(std::to_string(c));
  std::vector<ChartSeries> score, kept;
  std::string md = fmt::format(
      "# Pooling, {} ({})\n\n| kernel | capacity | {} | answer tokens kept | heads keeping the whole answer |\n"
      "|--:|--:|--:|--:|--:|\n",
      r.model, o.press.describe(), r.score_name);
  for (const int k : o.kernels) {
    ChartSeries s{k == 1 ? "no pooling" : fmt::format("kernel {}", k), {}}, a = s;
    for (const int c : o.capacities) {
      const PoolingCell m = r.mean(k, c);
      s.y.push_back(m.score);
      a.y.push_back(m.answer_kept);
      md += fmt::format("| {} | {} | {:.1f} | {} | {} |\n", k, c, m.score, pct(m.answer_kept), pct(m.answer_whole));
    }
    score.push_back(std::move(s));
    kept.push_back(std::move(a));
  }
  write_file(out, "pooling.svg",
             line_chart_svg(fmt::format("{}: {} by pooling kernel", r.model, r.score_name), "KV capacity per head",
                            r.score_name, x, score, r.score_max));
  write_file(out, "pooling_answer_kept.svg",
             line_chart_svg(fmt::format("{}: share of the answer's tokens kept", r.model), "KV capacity per head",
                            "answer tokens kept", x, kept, 1.0));
  return md;
}

nlohmann::json map_json(const KeptMap& m) {
  return {{"model", m.model},
          {"case", m.case_id},
          {"press", m.press},
          {"prompt_tokens", m.prompt_tokens},
          {"n_layer", m.n_layer},
          {"n_head_kv", m.n_head_kv},
          {"question", {m.question.first, m.question.second}},
          {"answer", {m.answer.first, m.answer.second}},
          {"kept", m.kept}};
}

std::string write_map_plot(const KeptMap& m, const std::string& out) {
  // One pixel column per bin of positions, one band of rows per layer x KV head; the shade is
  // the share of the bin's positions kept.
  const int cols = std::min(m.prompt_tokens, 900), heads = m.n_layer * m.n_head_kv;
  const int rh = std::clamp(480 / std::max(heads, 1), 1, 6);
  const int height = heads * rh;
  const auto bin = [&](int pos) { return static_cast<int>(static_cast<int64_t>(pos) * cols / m.prompt_tokens); };
  std::vector<int> bin_size(cols, 0);
  for (int p = 0; p < m.prompt_tokens; ++p) ++bin_size[bin(p)];
  std::vector<uint8_t> rgb(static_cast<size_t>(cols) * height * 3, 255);
  int64_t answer_kept = 0, answer_heads = 0;
  for (int il = 0; il < m.n_layer; ++il) {
    for (int h = 0; h < m.n_head_kv; ++h) {
      std::vector<int> count(cols, 0);
      for (const int32_t p : m.kept[il][h]) {
        if (p >= 0 && p < m.prompt_tokens) ++count[bin(p)];
        answer_kept += p >= m.answer.first && p < m.answer.second;
      }
      answer_heads += 1;
      for (int x = 0; x < cols; ++x) {
        const double f = bin_size[x] ? static_cast<double>(count[x]) / bin_size[x] : 0;
        const uint8_t px[3] = {static_cast<uint8_t>(255 - 225 * f), static_cast<uint8_t>(255 - 190 * f),
                               static_cast<uint8_t>(255 - 95 * f)};
        for (int y = (il * m.n_head_kv + h) * rh; y < (il * m.n_head_kv + h + 1) * rh; ++y) {
          std::copy(px, px + 3, rgb.begin() + (static_cast<size_t>(y) * cols + x) * 3);
        }
      }
    }
  }
  const std::string png = png_rgb(cols, height, rgb);
  write_file(out, "map.png", png);

  const int scale = std::max(1, 900 / cols), left = 70, top = 60, iw = cols * scale;
  const int w = left + iw + 20, svg_h = top + height + 50;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"4\" y=\"16\" font-size=\"13\">{}: positions kept by {} ({}), {} prompt tokens</text>\n"
      "<text x=\"4\" y=\"34\">rows: layer x KV head (layer 0 on top); darker: more of the positions kept; "
      "orange: the question; red: the answer in the context</text>\n"
      "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" "
      "style=\"image-rendering:pixelated\" href=\"data:image/png;base64,{}\"/>\n",
      w, svg_h, m.model, m.press, m.case_id, m.prompt_tokens, left, top, iw, height, base64(png));
  const auto mark = [&](std::pair<int, int> r, const char* colour) {
    if (r.first < 0) return;
    const int x0 = left + bin(r.first) * scale, x1 = left + (bin(std::max(r.first, r.second - 1)) + 1) * scale;
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"{}\"/>\n", x0,
        top - 8, x1 - x0, height + 8, colour, colour);
  };
  mark(m.question, "#ff7f0e");
  mark(m.answer, "#d62728");
  for (int il = 0; il < m.n_layer; il += 5) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n", left - 4,
                     top + il * m.n_head_kv * rh + 10, il);
  }
  for (int k = 0; k <= 4; ++k) {
    const int pos = static_cast<int>(static_cast<int64_t>(m.prompt_tokens) * k / 4);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + iw * k / 4,
                     top + height + 18, pos);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">position in the prompt</text>\n</svg>\n",
                   left + iw / 2, top + height + 38);
  write_file(out, "map.svg", s);

  const int span = m.answer.second - m.answer.first;
  return fmt::format(
      "# Kept positions, {} ({}, case {}, {} prompt tokens)\n\nquestion tokens {}..{}, answer tokens {}..{}; "
      "answer tokens kept: {}\n",
      m.model, m.press, m.case_id, m.prompt_tokens, m.question.first, m.question.second, m.answer.first,
      m.answer.second,
      m.answer.first < 0 ? "- (answer not found in the prompt)"
                         : pct(static_cast<double>(answer_kept) / static_cast<double>(span * answer_heads)));
}

}  // namespace snapkv::cli

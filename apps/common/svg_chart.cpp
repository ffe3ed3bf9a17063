#include "svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace snapkv::cli {
namespace {

// The smallest of 1, 2, 2.5, 5 times a power of ten that is >= v (v > 0).
double round_up(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<std::string>& x, const std::vector<ChartSeries>& series, double y_max) {
  if (y_max <= 0) {
    double top = 0;
    for (const ChartSeries& s : series) {
      for (double v : s.y) {
        if (std::isfinite(v)) top = std::max(top, v);
      }
    }
    y_max = top > 0 ? round_up(top) : 1;
  }
  const int w = 600, h = 340, left = 64, right = 170, top = 36, bottom = 44;
  const int pw = w - left - right, ph = h - top - bottom;
  const size_t nx = x.size();
  const auto px = [&](size_t i) { return left + (nx <= 1 ? pw / 2 : static_cast<int>(pw * i / (nx - 1))); };
  const auto py = [&](double v) { return top + ph - static_cast<int>(ph * std::clamp(v / y_max, 0.0, 1.0)); };
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"18\" font-size=\"13\">{}</text>\n"
      "<text transform=\"translate(14,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      w, h, left, title, top + ph / 2, y_label);
  for (int k = 0; k <= 4; ++k) {
    const double v = y_max * k / 4;
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e0e0e0\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">{:g}</text>\n",
        left, py(v), left + pw, py(v), left - 6, py(v) + 4, v);
  }
  for (size_t i = 0; i < nx; ++i) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(i), top + ph + 18, x[i]);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, h - 6, x_label);
  for (size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& c = series[k];
    const std::string colour = kColours[k % std::size(kColours)];
    const std::string dash = c.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string points;
    for (size_t i = 0; i < nx && i < c.y.size(); ++i) {
      if (!std::isfinite(c.y[i])) continue;
      points += fmt::format("{},{} ", px(i), py(c.y[i]));
      if (!c.dashed) s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", px(i), py(c.y[i]), colour);
    }
    s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", points, colour,
                     dash);
    const int ly = top + 14 + 18 * static_cast<int>(k);
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        w - right + 12, ly, w - right + 36, ly, colour, dash, w - right + 42, ly + 4, c.name);
  }
  return s + "</svg>\n";
}

}  // namespace snapkv::cli

#pragma once
// A line chart as a standalone SVG document, for the plots the bench and eval commands write.
#include <string>
#include <vector>

namespace snapkv::cli {

struct ChartSeries {
  std::string name;
  std::vector<double> y;  // one value per x label; NaN where the series has none
  bool dashed = false;
};

// The x labels are spaced evenly (categories: prompt lengths, capacities); the y axis runs from 0
// to y_max, or to the largest value (rounded up) when y_max <= 0.
std::string line_chart_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<std::string>& x, const std::vector<ChartSeries>& series,
                           double y_max = 0);

}  // namespace snapkv::cli

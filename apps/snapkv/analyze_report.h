#pragma once
// What `snapkv analyze` writes: each analysis' numbers as JSON, its plots (SVG; the map also as
// PNG) in the output folder, and a short Markdown summary for stdout.
#include <nlohmann/json.hpp>

#include <string>

#include "snapkv/analyze.h"

namespace snapkv::cli {

nlohmann::json hit_rate_json(const HitRateResult& r, const HitRateOptions& o);
nlohmann::json overlap_json(const OverlapResult& r, const OverlapOptions& o);
nlohmann::json pooling_json(const PoolingResult& r, const PoolingOptions& o);
nlohmann::json map_json(const KeptMap& m);

// Each writes its plots into out and returns the summary.
std::string write_hit_rate_plots(const HitRateResult& r, const HitRateOptions& o, const std::string& out);
std::string write_overlap_plot(const OverlapResult& r, const std::string& out);
std::string write_pooling_plots(const PoolingResult& r, const PoolingOptions& o, const std::string& out);
std::string write_map_plot(const KeptMap& m, const std::string& out);

}  // namespace snapkv::cli

// Press options (validation, names) and the registry of presses.
#include "kv/press.h"

#include <fmt/format.h>

#include <utility>

#include "kv/presses/presses.h"
#include "util/error.h"

namespace snapkv {
namespace {

using Factory = std::unique_ptr<Press> (*)(const PressConfig&);

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"full", make_full_press},       {"snapkv", make_snapkv_press},   {"pyramidkv", make_pyramidkv_press},
      {"ada_kv", make_ada_kv_press},   {"streaming_llm", make_streaming_llm_press},
      {"h2o", make_h2o_press},         {"tova", make_tova_press},       {"knorm", make_knorm_press},
      {"random", make_random_press},
  };
  return r;
}

}  // namespace

const std::vector<std::string>& press_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, f] : registry()) n.push_back(name);
    return n;
  }();
  return names;
}

std::string PressConfig::validate() const {
  bool known = false;
  for (const std::string& n : press_names()) known |= n == press;
  if (!known) return fmt::format("unknown press '{}' (one of: {})", press, fmt::join(press_names(), ", "));
  if (ratio < 0 || ratio >= 1) return fmt::format("the compression ratio must be in (0, 1), got {}", ratio);
  if (capacity < 1) return fmt::format("the KV capacity must be positive, got {}", capacity);
  if (window < 1 || window > 4096) return fmt::format("the observation window must be in [1, 4096], got {}", window);
  const bool windowed = press == "snapkv" || press == "pyramidkv" || press == "ada_kv";
  if (windowed && ratio == 0 && capacity <= window) {
    return fmt::format("the KV capacity ({}) must be larger than the observation window ({}): the capacity includes the window",
                       capacity, window);
  }
  if (kernel < 1 || kernel > 1023 || kernel % 2 == 0) return fmt::format("the pooling kernel must be odd and in [1, 1023], got {}", kernel);
  if (sinks < 0 || (ratio == 0 && press == "streaming_llm" && sinks >= capacity)) {
    return fmt::format("streaming_llm needs 0 <= sinks < capacity, got {} sinks", sinks);
  }
  if (alpha < 0 || alpha > 1) return fmt::format("ada_kv's alpha must be in [0, 1], got {}", alpha);
  if (beta < 1) return fmt::format("pyramidkv's beta must be >= 1, got {}", beta);
  if (recompress < 0) return fmt::format("--kv-recompress must be >= 0, got {}", recompress);
  return {};
}

std::string PressConfig::describe() const {
  if (!compresses()) return "full";
  std::string budget = ratio > 0 ? fmt::format("ratio {}", ratio) : fmt::format("capacity {}", capacity);
  return fmt::format("{} ({}, window {}, kernel {}, pool {}, gqa {}{})", press, budget, window, kernel,
                     pool_name(pool), gqa_name(gqa), compress_short ? ", always" : "");
}

bool parse_pool(const std::string& s, PoolKind& out) {
  if (s == "max") return out = PoolKind::kMax, true;
  if (s == "avg") return out = PoolKind::kAvg, true;
  return false;
}

bool parse_gqa(const std::string& s, GqaReduce& out) {
  if (s == "mean") return out = GqaReduce::kMean, true;
  if (s == "max") return out = GqaReduce::kMax, true;
  if (s == "per_query_head") return out = GqaReduce::kPerQueryHead, true;
  return false;
}

bool parse_variant(const std::string& s, PressVariant& out) {
  if (s == "paper") return out = PressVariant::kPaper, true;
  if (s == "kvpress") return out = PressVariant::kKvpress, true;
  return false;
}

const char* pool_name(PoolKind p) { return p == PoolKind::kMax ? "max" : "avg"; }
const char* gqa_name(GqaReduce g) {
  return g == GqaReduce::kMean ? "mean" : g == GqaReduce::kMax ? "max" : "per_query_head";
}
const char* variant_name(PressVariant v) { return v == PressVariant::kPaper ? "paper" : "kvpress"; }

std::unique_ptr<Press> make_press(const PressConfig& c) {
  if (const std::string err = c.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  for (const auto& [name, factory] : registry()) {
    if (name == c.press) return factory(c);
  }
  fail(ErrorKind::kInternal, "press '{}' has no factory", c.press);
}

}  // namespace snapkv

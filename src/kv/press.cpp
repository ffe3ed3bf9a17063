// The registry of presses, and the validation of a press configuration.
#include "kv/press.h"

#include <fmt/format.h>

#include "kv/press_budget.h"
#include "kv/press_scores.h"
#include "kv/presses/presses.h"
#include "util/error.h"

namespace snapkv {
namespace {

struct Registered {
  PressInfo info;
  std::unique_ptr<Press> (*make)(const PressConfig&);
  // The capacity includes the observation window, so it must be larger than the window.
  bool window_in_capacity;
  // A name for a scorer with a budget of its own (pyramidkv, ada_kv): the budget it implies.
  BudgetKind budget = BudgetKind::kUniform;
};

// The one list of presses: a new press is a file in kv/presses/ and a line here.
const std::vector<Registered>& registry() {
  static const std::vector<Registered> r = {
      {{"full", "keeps every entry (the uncompressed baseline)"}, make_full_press, false},
      {{"snapkv", "the window, and the prefix entries the window's queries attend to most (pooled)"},
       make_snapkv_press, true},
      {{"pyramidkv", "snapkv with budget pyramid: layer budgets that shrink linearly from the first layer to the last"},
       make_snapkv_press, true, BudgetKind::kPyramid},
      {{"ada_kv", "snapkv with budget ada: each layer's budget shared adaptively among its KV heads"},
       make_snapkv_press, true, BudgetKind::kAda},
      {{"streaming_llm", "the first `sinks` entries (attention sinks) and the most recent ones"},
       make_streaming_llm_press, false},
      {{"h2o", "the entries that received the most attention from the prompt's queries (observed attention)"},
       make_h2o_press, false},
      {{"tova", "the entries the last prompt token attends to most, and that token's own entry"}, make_tova_press,
       false},
      {{"knorm", "the entries whose keys have the smallest L2 norm"}, make_knorm_press, false},
      {{"keydiff", "the entries whose keys point furthest from the head's mean key direction (no query needed)"},
       make_keydiff_press, false},
      {{"random", "uniformly random entries, reproducible from the seed"}, make_random_press, false},
  };
  return r;
}

const Registered* find_registered(const std::string& name) {
  for (const Registered& r : registry()) {
    if (r.info.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

const std::vector<PressInfo>& press_infos() {
  static const std::vector<PressInfo> infos = [] {
    std::vector<PressInfo> out;
    for (const Registered& r : registry()) out.push_back(r.info);
    return out;
  }();
  return infos;
}

const std::vector<std::string>& press_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Registered& r : registry()) out.push_back(r.info.name);
    return out;
  }();
  return names;
}

std::string PressConfig::validate() const {
  // Each option within its range (the table's), the press name first.
  for (const PressParam& p : press_params()) {
    if (std::string err = p.check(p.get(*this), ""); !err.empty()) return err;
  }
  // Then the rules that tie options together.
  if (find_registered(press)->window_in_capacity && ratio == 0 && capacity <= window) {
    return fmt::format("the KV capacity ({}) must be larger than the observation window ({}): the capacity includes the window",
                       capacity, window);
  }
  if (const BudgetKind own = find_registered(press)->budget; own != BudgetKind::kUniform && budget != BudgetKind::kUniform &&
      budget != own) {
    return fmt::format("{} is snapkv with budget {}: for budget {}, name snapkv", press, budget_name(own),
                       budget_name(budget));
  }
  if (chunk > 0 && ratio == 0 && chunk > capacity) {
    return fmt::format("a chunk ({} entries) must fit in the KV capacity ({})", chunk, capacity);
  }
  if (ratio == 0 && press == "streaming_llm" && sinks >= capacity) {
    return fmt::format("streaming_llm needs 0 <= sinks < capacity, got {} sinks", sinks);
  }
  return {};
}

std::string PressConfig::describe() const {
  if (!compresses()) return "full";
  std::string size = ratio > 0 ? fmt::format("ratio {}", ratio) : fmt::format("capacity {}", capacity);
  return fmt::format("{} ({}, window {}, kernel {}, pool {}, gqa {}{}{}{})", press, size, window, kernel,
                     pool_name(pool), gqa_name(gqa), compress_short ? ", always" : "",
                     budget != BudgetKind::kUniform ? fmt::format(", budget {}", budget_name(budget)) : "",
                     chunk > 0 ? fmt::format(", chunks of {}", chunk) : "");
}

Selection Press::select(const LayerInput& in) const {
  if (!cfg_.compresses() || layer_is_short(cfg_, in.kv)) return {};
  return select_budgeted(cfg_, in, score(in));
}

std::unique_ptr<Press> make_press(const PressConfig& c) {
  if (const std::string err = c.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const Registered& r = *find_registered(c.press);
  PressConfig resolved = c;
  if (r.budget != BudgetKind::kUniform) resolved.budget = r.budget;
  return r.make(resolved);
}

}  // namespace snapkv

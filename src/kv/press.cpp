// The registry of presses, and the validation of a press configuration.
#include "kv/press.h"

#include <fmt/format.h>

#include <algorithm>

#include "kv/press_budget.h"
#include "kv/press_scores.h"
#include "kv/presses/presses.h"
#include "util/error.h"

namespace snapkv {
namespace {

struct Registered {
  PressInfo info;
  std::unique_ptr<Press> (*make)(const PressConfig&);  // null for an alias
  // The capacity includes the observation window, so it must be larger than the window.
  bool window_in_capacity;
  // An alias: another press with options of its own, as a press spec (apply_press_spec).
  const char* alias = nullptr;
};

// The one list of presses: a new press is a file in kv/presses/ and a line here; a named
// combination of a press and options is an alias line.
const std::vector<Registered>& registry() {
  static const std::vector<Registered> r = {
      {{"full", "keeps every entry (the uncompressed baseline)"}, make_full_press, false},
      {{"snapkv", "the window, and the prefix entries the window's queries attend to most (pooled)"},
       make_snapkv_press, true},
      {{"pyramidkv", "snapkv with budget pyramid: layer budgets that shrink linearly from the first layer to the last"},
       nullptr, true, "snapkv+budget=pyramid"},
      {{"ada_kv", "snapkv with budget ada: each layer's budget shared adaptively among its KV heads"},
       nullptr, true, "snapkv+budget=ada"},
      {{"recommended", "snapkv with budget ada, whole chunks of up to 24 that hold whole sentences and token "
                       "runs of up to 32 (a number's digits, a word's pieces): the configuration that keeps the "
                       "most of the full cache's answers in our evaluations (docs/evaluation.md)"},
       nullptr, true, "snapkv+budget=ada+chunk=24+runs=32+sentences=on"},
      {{"streaming_llm", "the first `sinks` entries (attention sinks) and the most recent ones"},
       make_streaming_llm_press, false},
      {{"h2o", "the entries that received the most attention from the prompt's queries (observed attention)"},
       make_h2o_press, false},
      {{"tova", "the entries the last prompt token attends to most, and that token's own entry"}, make_tova_press,
       false},
      {{"tova_decode", "TOVA as published: tova, and while generating, each new token evicts the entry it "
                       "attends to least (over all heads) once a layer holds more than the capacity"},
       nullptr, false, "tova+recompress=1"},
      {{"knorm", "the entries whose keys have the smallest L2 norm"}, make_knorm_press, false},
      {{"keydiff", "the entries whose keys point furthest from the head's mean key direction (no query needed)"},
       make_keydiff_press, false},
      {{"random", "uniformly random entries, reproducible from the seed"}, make_random_press, false},
      {{"expected_attention", "the first `sinks` entries, and the others by the attention the prompt's average "
                              "query, rotated to the next `future` positions, can expect to pay them, times their "
                              "value's norm (no question needed)"},
       make_expected_attention_press, false},
      {{"kvzip", "the entries the model attends to most while it repeats the context after it (no question "
                 "needed; re-reading the context costs more than its prefill: docs/presses.md)"},
       make_kvzip_press, false},
  };
  return r;
}

const Registered* find_registered(const std::string& name) {
  for (const Registered& r : registry()) {
    if (r.info.name == name) return &r;
  }
  return nullptr;
}

// c with an alias's press and options in place (out = c for a press that is no alias), or the
// error when c gives one of those options another value than its default.
std::string resolve_alias(const PressConfig& c, PressConfig& out) {
  out = c;
  const Registered* r = find_registered(c.press);
  if (!r || !r->alias) return {};
  if (std::string err = apply_press_spec(out, r->alias); !err.empty()) return err;
  const PressConfig defaults;
  for (const PressParam& p : press_params()) {
    const std::string mine = p.text(c), theirs = p.text(out);
    if (p.name != "press" && mine != theirs && mine != p.text(defaults)) {
      return fmt::format("{} is {}: {} {} does not go with it (give {} and each option instead)", c.press, r->alias,
                         p.name, mine, out.press);
    }
  }
  return {};
}

// The rules that tie a (resolved) configuration's options together.
std::string check_rules(const PressConfig& c) {
  if (find_registered(c.press)->window_in_capacity && c.ratio == 0 && c.capacity <= c.window) {
    return fmt::format("the KV capacity ({}) must be larger than the observation window ({}): the capacity includes "
                       "the window", c.capacity, c.window);
  }
  if (c.chunk > 0 && c.ratio == 0 && c.chunk > c.capacity) {
    return fmt::format("a chunk ({} entries) must fit in the KV capacity ({})", c.chunk, c.capacity);
  }
  if (c.sentences && c.chunk == 0) return "sentences shape chunks: give a chunk size too";
  if (c.ratio == 0 && (c.press == "streaming_llm" || c.press == "expected_attention" || c.press == "kvzip") &&
      c.sinks >= c.capacity) {
    return fmt::format("{} needs 0 <= sinks < capacity, got {} sinks", c.press, c.sinks);
  }
  return {};
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
  // Each option within its range (the table's), the press name first; then an alias's own
  // options in place, the rules that tie options together.
  for (const PressParam& p : press_params()) {
    if (std::string err = p.check(p.get(*this), ""); !err.empty()) return err;
  }
  PressConfig r;
  if (std::string err = resolve_alias(*this, r); !err.empty()) return err;
  return check_rules(r);
}

std::string PressConfig::describe() const {
  if (!compresses()) return "full";
  PressConfig r;
  if (resolve_alias(*this, r).empty() && r.press != press) return fmt::format("{} = {}", press, r.describe());
  std::string size = ratio > 0 ? fmt::format("ratio {}", ratio) : fmt::format("capacity {}", capacity);
  return fmt::format("{} ({}, window {}, kernel {}, pool {}, gqa {}{}{}{}{}{}{})", press, size, window, kernel,
                     pool_name(pool), gqa_name(gqa), compress_short ? ", always" : "",
                     budget != BudgetKind::kUniform ? fmt::format(", budget {}", budget_name(budget)) : "",
                     critical > 0 ? fmt::format(", critical {}", critical) : "",
                     chunk > 0 ? fmt::format(", chunks of {}", chunk) : "",
                     runs > 0 ? fmt::format(", runs of up to {}", runs) : "", sentences ? ", whole sentences" : "");
}

PressNeeds& PressNeeds::operator|=(const PressNeeds& o) {
  if (stats_from >= 0 && o.stats_from >= 0 && stats_from != o.stats_from) {
    fail(ErrorKind::kInvalidArgument, "presses that need query statistics from different positions ({} and {} "
         "sinks) cannot share one prefill; run them apart", stats_from, o.stats_from);
  }
  observed |= o.observed;
  reconstruct |= o.reconstruct;
  stats_from = std::max(stats_from, o.stats_from);
  return *this;
}

Selection Press::select(const LayerInput& in) const {
  if (!cfg_.compresses() || layer_is_short(cfg_, in.kv)) return {};
  return select_budgeted(cfg_, in, score(in));
}

std::unique_ptr<Press> make_press(const PressConfig& c) {
  if (const std::string err = c.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  PressConfig resolved;
  resolve_alias(c, resolved);
  return find_registered(resolved.press)->make(resolved);
}

}  // namespace snapkv

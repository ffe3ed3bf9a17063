// The press options table (snapkv/press.h): the one place an option's name, type, range and help
// are written. The CLI flags, the server's kv_compression fields, PressConfig::validate() and the
// docs table are generated from it.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "snapkv/press.h"

namespace snapkv {
namespace {

constexpr PoolKind kPools[] = {PoolKind::kMax, PoolKind::kAvg};
constexpr GqaReduce kGqas[] = {GqaReduce::kMean, GqaReduce::kMax, GqaReduce::kPerQueryHead};
constexpr BudgetKind kBudgets[] = {BudgetKind::kUniform, BudgetKind::kPyramid, BudgetKind::kAda};
constexpr PressVariant kVariants[] = {PressVariant::kPaper, PressVariant::kKvpress};

constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());

// Accessors of a PressConfig member by pointer; check() has already accepted the value and set()
// has converted it to the option's type.
template <auto M>
PressValue get_int(const PressConfig& c) {
  return static_cast<int64_t>(c.*M);
}
template <auto M>
void put_int(PressConfig& c, const PressValue& v) {
  c.*M = static_cast<std::remove_reference_t<decltype(c.*M)>>(std::get<int64_t>(v));
}
template <auto M>
PressValue get_real(const PressConfig& c) {
  return c.*M;
}
template <auto M>
void put_real(PressConfig& c, const PressValue& v) {
  c.*M = std::get<double>(v);
}

template <typename Enum, size_t N>
std::vector<std::string> names_of(const Enum (&all)[N], const char* (*name)(Enum)) {
  std::vector<std::string> out;
  for (Enum e : all) out.emplace_back(name(e));
  return out;
}

PressParam number(std::string name, PressParam::Type type, double min, double max, std::string help) {
  PressParam p;
  p.name = std::move(name);
  p.type = type;
  p.min = min;
  p.max = max;
  p.help = std::move(help);
  return p;
}

PressParam choice(std::string name, std::vector<std::string> choices, std::string help) {
  PressParam p;
  p.name = std::move(name);
  p.type = PressParam::Type::kChoice;
  p.choices = std::move(choices);
  p.help = std::move(help);
  return p;
}

std::vector<PressParam> make_table() {
  using T = PressParam::Type;
  std::vector<PressParam> t;
  PressParam p = choice("press", press_names(), "which entries each KV head keeps; `snapkv presses` lists them");
  p.get = [](const PressConfig& c) -> PressValue { return c.press; };
  p.put = [](PressConfig& c, const PressValue& v) { c.press = std::get<std::string>(v); };
  t.push_back(p);

  p = number("capacity", T::kInt, 1, 1 << 24, "entries kept per KV head, window included");
  p.get = get_int<&PressConfig::capacity>, p.put = put_int<&PressConfig::capacity>;
  t.push_back(p);

  p = number("ratio", T::kReal, 0, 1, "instead of a capacity: fraction of the prompt's entries dropped");
  p.min_open = p.max_open = p.zero_allowed = true;
  p.get = get_real<&PressConfig::ratio>, p.put = put_real<&PressConfig::ratio>;
  t.push_back(p);

  p = number("window", T::kInt, 1, 4096, "observation window: last prompt tokens that score the rest");
  p.get = get_int<&PressConfig::window>, p.put = put_int<&PressConfig::window>;
  t.push_back(p);

  p = number("kernel", T::kInt, 1, 1023, "pooling kernel along the prompt");
  p.odd = true;
  p.get = get_int<&PressConfig::kernel>, p.put = put_int<&PressConfig::kernel>;
  t.push_back(p);

  p = choice("pool", names_of(kPools, pool_name), "pooling of the scores along the prompt");
  p.get = [](const PressConfig& c) -> PressValue { return pool_name(c.pool); };
  p.put = [](PressConfig& c, const PressValue& v) { parse_pool(std::get<std::string>(v), c.pool); };
  t.push_back(p);

  p = choice("gqa", names_of(kGqas, gqa_name), "how a KV head's query heads' scores are combined (GQA models)");
  p.get = [](const PressConfig& c) -> PressValue { return gqa_name(c.gqa); };
  p.put = [](PressConfig& c, const PressValue& v) { parse_gqa(std::get<std::string>(v), c.gqa); };
  t.push_back(p);

  p = choice("short", {"skip", "always"},
             "prompts no longer than the capacity: skip (kept whole, official) or always (pressed anyway, kvpress)");
  p.get = [](const PressConfig& c) -> PressValue { return c.compress_short ? "always" : "skip"; };
  p.put = [](PressConfig& c, const PressValue& v) { c.compress_short = std::get<std::string>(v) == "always"; };
  t.push_back(p);

  p = number("sinks", T::kInt, 0, 1 << 24, "streaming_llm, expected_attention, kvzip: initial tokens always kept");
  p.get = get_int<&PressConfig::sinks>, p.put = put_int<&PressConfig::sinks>;
  t.push_back(p);

  p = number("future", T::kInt, 1, 1 << 20,
             "expected_attention: how many positions after the prompt its expected queries are averaged over");
  p.get = get_int<&PressConfig::future>, p.put = put_int<&PressConfig::future>;
  t.push_back(p);

  p = choice("budget", names_of(kBudgets, budget_name),
             "how the capacity is shared, over any scoring press: the same for every head (uniform), shrinking "
             "from the first layer to the last (pyramid, PyramidKV), or among a layer's KV heads by their scores "
             "(ada, Ada-KV)");
  p.get = [](const PressConfig& c) -> PressValue { return budget_name(c.budget); };
  p.put = [](PressConfig& c, const PressValue& v) { parse_budget(std::get<std::string>(v), c.budget); };
  t.push_back(p);

  p = number("alpha", T::kReal, 0, 1, "budget ada: guaranteed share of each head's budget");
  p.get = get_real<&PressConfig::alpha>, p.put = put_real<&PressConfig::alpha>;
  t.push_back(p);

  p = number("beta", T::kInt, 1, 1 << 16, "budget pyramid: smallest layer budget = budget / beta");
  p.get = get_int<&PressConfig::beta>, p.put = put_int<&PressConfig::beta>;
  t.push_back(p);

  p = choice("variant", names_of(kVariants, variant_name),
             "pyramid and ada budget formulas: the papers' or kvpress 0.5.5's");
  p.get = [](const PressConfig& c) -> PressValue { return variant_name(c.variant); };
  p.put = [](PressConfig& c, const PressValue& v) { parse_variant(std::get<std::string>(v), c.variant); };
  t.push_back(p);

  p = number("seed", T::kInt, 0, kInt64Max, "random: seed of the kept entries");
  p.get = get_int<&PressConfig::seed>, p.put = put_int<&PressConfig::seed>;
  t.push_back(p);

  p = number("recompress", T::kInt, 0, 1 << 24,
             "during generation, re-compress a head once it holds capacity + N entries (0 = never)");
  p.get = get_int<&PressConfig::recompress>, p.put = put_int<&PressConfig::recompress>;
  t.push_back(p);

  p = number("critical", T::kReal, 0, 1,
             "CriticalKV, over any scoring press: this share of the capacity by the press's scores, the rest by "
             "score x |W_o v|_1, what each entry's value adds to the layer's output (0 = off; the paper: 0.5)");
  p.min_open = true;
  p.zero_allowed = true;
  p.get = get_real<&PressConfig::critical>, p.put = put_real<&PressConfig::critical>;
  t.push_back(p);

  p = number("chunk", T::kInt, 0, 1 << 16,
             "keep whole chunks of N entries, best mean score first, the same chunks in every head of a layer "
             "(each head its own with budget ada) (ChunkKV; 0 = single entries)");
  p.get = get_int<&PressConfig::chunk>, p.put = put_int<&PressConfig::chunk>;
  t.push_back(p);

  p = number("runs", T::kInt, 0, 1 << 10,
             "keep whole token runs (the digits of a number, the pieces of a word or identifier: tokens not "
             "parted by whitespace) of at most N tokens, by their best entry; with chunk, chunks end between runs "
             "(0 = off)");
  p.get = get_int<&PressConfig::runs>, p.put = put_int<&PressConfig::runs>;
  t.push_back(p);

  p = choice("sentences", {"off", "on"},
             "with chunk: chunks hold whole sentences (ending at . ! ? before whitespace, or a line break), "
             "as many as fit in N entries; a longer sentence is cut every N entries, between runs");
  p.get = [](const PressConfig& c) -> PressValue { return c.sentences ? "on" : "off"; };
  p.put = [](PressConfig& c, const PressValue& v) { c.sentences = std::get<std::string>(v) == "on"; };
  t.push_back(p);

  for (PressParam& q : t) q.default_text = q.text(PressConfig{});
  return t;
}

std::string bound_text(const PressParam& p, double x) {
  return p.type == PressParam::Type::kInt ? fmt::format("{}", static_cast<int64_t>(x)) : fmt::format("{}", x);
}

}  // namespace

const std::vector<PressParam>& press_params() {
  static const std::vector<PressParam> table = make_table();
  return table;
}

const PressParam* find_press_param(const std::string& name) {
  for (const PressParam& p : press_params()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string apply_press_spec(PressConfig& c, const std::string& spec) {
  size_t begin = 0;
  for (bool first = true; begin <= spec.size(); first = false) {
    const size_t end = std::min(spec.find('+', begin), spec.size());
    const std::string part = spec.substr(begin, end - begin);
    begin = end + 1;
    const size_t eq = part.find('=');
    const std::string name = first ? "press" : part.substr(0, eq);
    const std::string value = first ? part : eq == std::string::npos ? std::string() : part.substr(eq + 1);
    if (!first && (eq == std::string::npos || name == "press")) {
      return fmt::format("press '{}': '{}' is not OPTION=VALUE (one option of the table after the press name)", spec,
                         part);
    }
    const PressParam* p = find_press_param(name);
    if (!p) return fmt::format("press '{}': unknown option '{}'", spec, name);
    if (std::string err = p->set_text(c, value, first ? "" : name); !err.empty()) {
      return first ? err : fmt::format("press '{}': {}", spec, err);
    }
  }
  return {};
}

const char* PressParam::type_name() const {
  return type == Type::kInt ? "integer" : type == Type::kReal ? "number" : "choice";
}

std::string PressParam::allowed() const {
  if (type == Type::kChoice) return fmt::format("{}", fmt::join(choices, " | "));
  std::string range = max >= kInt64Max
                          ? fmt::format("{} {}", min_open ? ">" : ">=", bound_text(*this, min))
                          : fmt::format("in {}{}, {}{}", min_open ? "(" : "[", bound_text(*this, min),
                                        bound_text(*this, max), max_open ? ")" : "]");
  if (odd) range = "odd, " + range;
  if (zero_allowed) range = "0 or " + range;
  return range;
}

std::string PressParam::text(const PressConfig& c) const {
  const PressValue v = get(c);
  if (const auto* i = std::get_if<int64_t>(&v)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return {};
}

std::string PressParam::check(const PressValue& v, const std::string& label) const {
  // An empty label comes from validate(): the option is named by its own name.
  const std::string who = label.empty() ? name : label;
  if (type == Type::kChoice) {
    const auto* s = std::get_if<std::string>(&v);
    if (!s) return fmt::format("{} must be a string, one of: {}", who, fmt::join(choices, ", "));
    for (const std::string& c : choices) {
      if (c == *s) return {};
    }
    return fmt::format("{}unknown {} '{}' (one of: {})", label.empty() ? "" : label + ": ", name, *s,
                       fmt::join(choices, ", "));
  }
  const char* a_type = type == Type::kInt ? "an integer" : "a number";
  double x = 0;
  std::string shown;
  if (const auto* i = std::get_if<int64_t>(&v)) {
    x = static_cast<double>(*i);
    shown = fmt::format("{}", *i);
  } else if (const auto* d = std::get_if<double>(&v); d && std::isfinite(*d)) {
    // 1e3 is an integer too.
    if (type == Type::kInt && std::nearbyint(*d) != *d) return fmt::format("{} must be an integer, got {}", who, *d);
    x = *d;
    shown = fmt::format("{}", *d);
  } else {
    return fmt::format("{} must be {}", who, a_type);
  }
  bool ok = (min_open ? x > min : x >= min) && (max_open ? x < max : x <= max);
  if (odd && std::fmod(x, 2.0) == 0) ok = false;
  if (zero_allowed && x == 0) ok = true;
  return ok ? std::string() : fmt::format("{} must be {}, got {}", who, allowed(), shown);
}

std::string PressParam::set(PressConfig& c, const PressValue& v, const std::string& label) const {
  if (std::string err = check(v, label); !err.empty()) return err;
  // check() accepted it: an integer given as a real is whole and in range, and the reverse is exact
  // enough for a ratio.
  if (type == Type::kInt && std::holds_alternative<double>(v)) {
    put(c, static_cast<int64_t>(std::get<double>(v)));
  } else if (type == Type::kReal && std::holds_alternative<int64_t>(v)) {
    put(c, static_cast<double>(std::get<int64_t>(v)));
  } else {
    put(c, v);
  }
  return {};
}

std::string PressParam::set_text(PressConfig& c, const std::string& text, const std::string& label) const {
  const std::string who = label.empty() ? name : label;
  if (type == Type::kInt) {
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return fmt::format("{} must be an integer, got '{}'", who, text);
    }
    return set(c, x, label);
  }
  if (type == Type::kReal) {
    char* end = nullptr;
    const double x = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x)) {
      return fmt::format("{} must be a number, got '{}'", who, text);
    }
    return set(c, x, label);
  }
  return set(c, text, label);
}

bool parse_pool(const std::string& s, PoolKind& out) {
  for (PoolKind k : kPools) {
    if (s == pool_name(k)) return out = k, true;
  }
  return false;
}

bool parse_gqa(const std::string& s, GqaReduce& out) {
  for (GqaReduce g : kGqas) {
    if (s == gqa_name(g)) return out = g, true;
  }
  return false;
}

bool parse_budget(const std::string& s, BudgetKind& out) {
  for (BudgetKind b : kBudgets) {
    if (s == budget_name(b)) return out = b, true;
  }
  return false;
}

bool parse_variant(const std::string& s, PressVariant& out) {
  for (PressVariant v : kVariants) {
    if (s == variant_name(v)) return out = v, true;
  }
  return false;
}

const char* pool_name(PoolKind p) { return p == PoolKind::kMax ? "max" : "avg"; }
const char* gqa_name(GqaReduce g) {
  return g == GqaReduce::kMean ? "mean" : g == GqaReduce::kMax ? "max" : "per_query_head";
}
const char* budget_name(BudgetKind b) {
  return b == BudgetKind::kUniform ? "uniform" : b == BudgetKind::kPyramid ? "pyramid" : "ada";
}
const char* variant_name(PressVariant v) { return v == PressVariant::kPaper ? "paper" : "kvpress"; }

}  // namespace snapkv

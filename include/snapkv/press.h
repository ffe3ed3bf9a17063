#pragma once
// KV cache compression options ("press" = a policy that decides which prompt entries each KV head
// keeps). Defaults are the SnapKV paper's LongBench setting: window 32, kernel 7, max pooling,
// and the official rule that prompts no longer than the capacity are kept whole.
//
// Each option is declared once, in press_params(): its name (the server's kv_compression field,
// the CLI flag --kv-<name>), type, allowed values and help. The CLI, the server, validate() and
// the docs table (`snapkv presses --markdown`) are all generated from that table.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace snapkv {

enum class PoolKind { kMax, kAvg };
// How the scores of a KV head's query heads become the head's score (GQA models).
enum class GqaReduce { kMean, kMax, kPerQueryHead };
// How a layer's capacity is shared out, over any scoring press: every head the same (uniform),
// shrinking from the first layer to the last (PyramidKV), or among a layer's KV heads by where
// their scores are high (Ada-KV).
enum class BudgetKind { kUniform, kPyramid, kAda };
// Which formula the pyramid and ada budgets use: the papers' or kvpress 0.5.5's.
enum class PressVariant { kPaper, kKvpress };

struct PressConfig {
  std::string press = "full";  // one of press_names()
  int capacity = 1024;         // entries kept per KV head, window included (used when ratio == 0)
  double ratio = 0;            // else: fraction of the prompt's entries dropped (kvpress's compression_ratio)
  int window = 32;             // observation window W (last prompt tokens)
  int kernel = 7;              // pooling kernel k (odd)
  PoolKind pool = PoolKind::kMax;
  GqaReduce gqa = GqaReduce::kMean;
  bool compress_short = false; // false (official): prompts of at most `capacity` entries stay whole,
                               // in ratio mode too; true: every prompt is pressed (kvpress)
  int sinks = 4;               // streaming_llm, expected_attention: initial entries always kept
  int future = 512;            // expected_attention: future query positions its average rotation covers
  BudgetKind budget = BudgetKind::kUniform;  // pyramidkv and ada_kv are snapkv with these budgets
  double alpha = 0.2;          // budget ada: share of each head's budget guaranteed (safeguard)
  int beta = 20;               // budget pyramid: min budget = B / beta
  PressVariant variant = PressVariant::kPaper;
  uint64_t seed = 0;           // random press
  int recompress = 0;          // > 0: during decoding, re-compress a head when it holds capacity + this many entries
  double critical = 0;         // > 0 (CriticalKV): this share of the capacity by the press's scores, the
                               // rest by score x ||W_o v||_1 (what the entry adds to the layer's output)
  int chunk = 0;               // > 0: keep whole chunks of this many entries (ChunkKV): the same in every
                               // head, or each head its own with budget ada
  int runs = 0;                // > 0: keep whole token runs (a number's digits, a word's pieces) of at
                               // most this many tokens, best run first; with chunk, chunks end
                               // between runs (kv/token_runs.h)
  bool sentences = false;      // with chunk: chunks hold whole sentences, packed while they fit in
                               // `chunk` entries (a longer sentence is cut every `chunk`, between runs)

  bool compresses() const { return press != "full"; }
  // Whether selection reads the prompt's token texts (token runs or sentences, kv/token_runs.h).
  bool reads_tokens() const { return runs > 0 || sentences; }
  // A readable error (empty when valid): every option within its range in press_params(), then
  // the rules that tie options together (the capacity holds the window; sinks < capacity).
  std::string validate() const;
  std::string describe() const;  // one line, for logs and reports
};

// The registered presses, in the registry's order (src/kv/press.cpp), each with one line saying
// what it keeps.
struct PressInfo {
  std::string name;
  std::string summary;
};
const std::vector<PressInfo>& press_infos();
const std::vector<std::string>& press_names();

// An option's value as a JSON document gives it: a string, an integer or a real number; anything
// else (true, an array, an object) is std::monostate and always rejected.
using PressValue = std::variant<std::monostate, int64_t, double, std::string>;

// One press option. `label` below is how the caller names the option in its errors
// ("--kv-capacity", "'kv_compression.capacity'"); every error is one sentence containing it.
struct PressParam {
  enum class Type { kInt, kReal, kChoice };

  std::string name;                  // kv_compression field; CLI flag --kv-<name>
  Type type = Type::kInt;
  std::string default_text;          // the default PressConfig's value, as text
  double min = 0, max = 0;           // kInt / kReal: allowed range, bounds included unless *_open
  bool min_open = false, max_open = false;
  bool zero_allowed = false;         // 0 is allowed outside the range (ratio: 0 = use the capacity)
  bool odd = false;                  // kInt: only odd values (pooling kernels)
  std::vector<std::string> choices;  // kChoice: the allowed strings
  std::string help;                  // one line
  PressValue (*get)(const PressConfig&) = nullptr;
  void (*put)(PressConfig&, const PressValue&) = nullptr;  // a value check() accepted

  std::string flag() const { return "--kv-" + name; }
  const char* type_name() const;  // "integer", "number", "choice"
  // The allowed values in words: "in [1, 4096]", "odd, in [1, 1023]", "0 or in (0, 1)", "max | avg".
  std::string allowed() const;
  // The option's value in c, as text ("1024", "0.2", "max").
  std::string text(const PressConfig& c) const;
  // Empty when v is of the option's type and allowed; else the error.
  std::string check(const PressValue& v, const std::string& label) const;
  // check(), then store v into c. Returns check()'s error (c unchanged then).
  std::string set(PressConfig& c, const PressValue& v, const std::string& label) const;
  // The same from a command-line word, parsed as the option's type ("1024", "0.5", "avg").
  std::string set_text(PressConfig& c, const std::string& text, const std::string& label) const;
};

// Every press option, in the order the CLI help and the docs list them.
const std::vector<PressParam>& press_params();

// A press with options of its own, in one word: NAME or NAME+OPTION=VALUE+OPTION=VALUE... (e.g.
// snapkv+budget=ada+chunk=20), as evaluations list configurations side by side. Sets c.press
// and those options over c's other values. Returns the error, naming the spec (c is then
// unspecified); empty when every part is a known option with an allowed value.
std::string apply_press_spec(PressConfig& c, const std::string& spec);
// The option with that name, or nullptr.
const PressParam* find_press_param(const std::string& name);

bool parse_pool(const std::string& s, PoolKind& out);
bool parse_gqa(const std::string& s, GqaReduce& out);
bool parse_budget(const std::string& s, BudgetKind& out);
bool parse_variant(const std::string& s, PressVariant& out);
const char* pool_name(PoolKind p);
const char* gqa_name(GqaReduce g);
const char* budget_name(BudgetKind b);
const char* variant_name(PressVariant v);

}  // namespace snapkv

#pragma once
// KV cache compression options ("press" = a policy that decides which prompt entries each KV head
// keeps). Defaults are the SnapKV paper's LongBench setting: window 32, kernel 7, max pooling,
// and the official rule that prompts no longer than the capacity are kept whole. validate()
// returns a readable error (empty when valid) for the CLI and the server.
#include <cstdint>
#include <string>
#include <vector>

namespace snapkv {

enum class PoolKind { kMax, kAvg };
// How the scores of a KV head's query heads become the head's score (GQA models).
enum class GqaReduce { kMean, kMax, kPerQueryHead };
// Which formula pyramidkv and ada_kv use for budgets: the papers' (SNAPKV.md) or kvpress 0.5.5's.
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
  int sinks = 4;               // streaming_llm: initial entries always kept
  double alpha = 0.2;          // ada_kv: share of each head's budget guaranteed (safeguard)
  int beta = 20;               // pyramidkv: min budget = B / beta
  PressVariant variant = PressVariant::kPaper;
  uint64_t seed = 0;           // random press
  int recompress = 0;          // > 0: during decoding, re-compress a head when it holds capacity + this many entries

  bool compresses() const { return press != "full"; }
  std::string validate() const;
  std::string describe() const;  // one line, for logs and reports
};

const std::vector<std::string>& press_names();
bool parse_pool(const std::string& s, PoolKind& out);
bool parse_gqa(const std::string& s, GqaReduce& out);
bool parse_variant(const std::string& s, PressVariant& out);
const char* pool_name(PoolKind p);
const char* gqa_name(GqaReduce g);
const char* variant_name(PressVariant v);

}  // namespace snapkv

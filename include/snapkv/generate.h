#pragma once
// Generation parameters and statistics: what generate() (snapkv/session.h) takes and returns.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "snapkv/press.h"
#include "snapkv/sampling.h"

namespace snapkv {

// Speculative decoding: a drafter guesses up to k next tokens, the model runs them in one forward
// pass and keeps the guesses its own sampling agrees with, so a pass can yield several tokens
// (greedy: the same tokens as without speculation; sampling: the same distribution).
enum class SpecMode {
  kNone,
  kPromptLookup,  // the tokens after an earlier occurrence of the last few tokens (no weights)
  kDraft,         // a smaller model's greedy continuation (generate()'s draft session)
};

struct SpeculationParams {
  SpecMode mode = SpecMode::kNone;
  // Tokens drafted per pass, 1..16. On the 2-thread Xeon VM a pass of 2 tokens costs about what
  // one costs and longer ones more (docs/speculative.md), so 1 is the default.
  int k = 1;
  int ngram_max = 3;  // prompt lookup: the longest run of last tokens matched, tried first
  int ngram_min = 2;  // prompt lookup: the shortest run matched (no draft below it)

  std::string validate() const;
};

// "prompt-lookup", "draft" or "none" as SpecMode, or Error(kInvalidArgument) naming them.
SpecMode parse_spec_mode(std::string_view name);

struct GenerateParams {
  int max_tokens = 128;
  SamplingParams sampling;
  SpeculationParams speculation;
  bool stop_at_eog = true;  // stop at the model's end-of-generation tokens
  bool compress_prompt = true;  // let the session's press compress the prompt

  std::string validate() const;
};

struct GenerateStats {
  int n_prompt = 0;
  int n_generated = 0;
  double prefill_s = 0;
  int n_decoded = 0;       // forward passes of generated tokens (the last one needs none)
  double decode_s = 0;     // time from the first sample to the last
  bool stopped_at_eog = false;
  // Speculative decoding: forward passes of generated tokens (with drafts or without: a token per
  // pass is n_decoded / n_passes), tokens drafted and drafts accepted.
  int n_passes = 0;
  int n_drafted = 0;
  int n_accepted = 0;
};

// on_token(id, text) receives each generated token with its complete UTF-8 text (possibly empty
// while a character is incomplete); returning false stops generation.
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;
// The same for sequence b of a batch (generate_batch).
using BatchTokenCallback = std::function<bool(size_t b, int32_t id, std::string_view text)>;

}  // namespace snapkv

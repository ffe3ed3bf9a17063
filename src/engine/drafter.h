#pragma once
// Drafters for speculative decoding: cheap guesses of the next tokens, which the model then
// verifies in one forward pass (generate.cpp keeps those its own sampling agrees with).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/sequence.h"

namespace snapkv {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to k tokens likely to follow history (the prompt and every token generated so far); none
  // when it has no guess.
  virtual std::vector<int32_t> draft(std::span<const int32_t> history, int k) = 0;
};

// Prompt lookup: the tokens that followed the latest earlier occurrence of history's last n
// tokens, for the longest n from ngram_max down to ngram_min that occurs. No weights, no forward
// pass.
std::unique_ptr<Drafter> prompt_lookup_drafter(int ngram_min, int ngram_max);

// A draft model's greedy continuation. draft follows history: it keeps the longest prefix of its
// tokens that history starts with (dropping the rest, e.g. rejected drafts), runs the remainder
// (its first prefill pressed when draft has a press) and then decodes k - 1 tokens. It must use
// the same vocabulary as the verifying model.
std::unique_ptr<Drafter> model_drafter(Sequence& draft);

}  // namespace snapkv

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
  // when it has no guess, or while it backs off: after a pass that kept none of its drafts it
  // skips as many passes as it backs off (1, then 2, 4, ... up to 16 after each further such
  // pass; back to 1 after a pass that kept one). A rejected draft costs a verification pass
  // about as much as a decode step on a CPU, so text that does not repeat itself is decoded
  // plainly.
  std::vector<int32_t> propose(std::span<const int32_t> history, int k);
  // How many of the last proposal's drafts the verification kept.
  void kept(int n_kept);
  // Catches up with history before the first proposal, so that the work of reading the prompt
  // (a draft model's prefill) falls in the prompt's prefill rather than in the first decode step.
  virtual void follow(std::span<const int32_t> /*history*/) {}

 protected:
  virtual std::vector<int32_t> draft(std::span<const int32_t> history, int k) = 0;

 private:
  int skip_ = 0, backoff_ = 1;
};

// Prompt lookup: the tokens that followed the latest earlier occurrence of history's last n
// tokens, for the longest n from ngram_max down to ngram_min that occurs. No weights, no forward
// pass.
std::unique_ptr<Drafter> prompt_lookup_drafter(int ngram_min, int ngram_max);

// A draft model's greedy continuation. draft follows history: it keeps the longest prefix of its
// tokens that history starts with (dropping the rest, e.g. rejected drafts), runs the remainder
// (its first prefill pressed when draft has a press; follow() runs the prompt ahead) and then
// decodes k - 1 tokens. It must use the same vocabulary as the verifying model.
std::unique_ptr<Drafter> model_drafter(Sequence& draft);

}  // namespace snapkv

#pragma once
// Greedy answers of sequences decoded together, one batched step per token (the weights are read
// once for all of them), as the task suites and `snapkv analyze pooling` answer their cases.
#include <span>
#include <string>
#include <vector>

#include "engine/sequence.h"
#include "eval/suite.h"
#include "snapkv/generate.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

// Each sequence stops at an end-of-generation token, after c.max_tokens, or (c.stop_at_newline)
// at a newline once its answer has text. Returns the answers without surrounding whitespace.
// With speculation (prompt lookup), each sequence's drafts go into the same batched steps and are
// verified there, which gives the same greedy tokens; stats (when given) receives each sequence's
// counts.
std::vector<std::string> answer_greedily(std::span<Sequence* const> seqs, const Tokenizer& tokenizer,
                                         const EvalCase& c, const SpeculationParams& spec = {},
                                         std::vector<GenerateStats>* stats = nullptr);

}  // namespace snapkv

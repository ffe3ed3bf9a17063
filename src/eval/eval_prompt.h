#pragma once
// How `snapkv eval` turns an EvalCase into the tokens the model reads: the user message is the
// context and the question (in the placement's order, joined by the case's separator), wrapped
// in the model's chat template (with the system message, if any) unless the case is raw text,
// followed by the answer prefix.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "snapkv/chat.h"
#include "eval/suite.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

struct EvalPrompt {
  std::vector<int32_t> ids;
  // Tokens before the question: the part prefilled (and compressed) before the question is seen
  // when the placement is question-agnostic, where the text is tokenized in two parts; ids.size()
  // otherwise.
  size_t split = 0;
};

EvalPrompt render_eval_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl, const EvalCase& c,
                              QuestionPlacement placement);

// FNV-1a (64-bit) of the ids' little-endian bytes, as 16 hex digits: a case's input hash.
std::string fnv1a_hex(std::span<const int32_t> ids);

}  // namespace snapkv

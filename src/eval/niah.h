#pragma once
// Needle in a haystack (gkamradt/LLMTest_NeedleInAHaystack, see shared/data/SOURCES.md §1): a
// needle sentence is hidden at a depth of a haystack of Paul Graham essays, the model is asked
// about it through its chat template and answers greedily; the answer is scored against the
// needle. One full prefill per (length, depth) case serves every press and capacity.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_template.h"
#include "eval/metrics.h"
#include "io/tokenizer.h"

namespace snapkv {

inline constexpr const char* kNiahNeedle =
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.";
inline constexpr const char* kNiahQuestion = "What is the best thing to do in San Francisco?";

// The prompt of one case, as token ids (the model's BOS rule; template specials parsed).
struct NiahPrompt {
  std::vector<int32_t> ids;
  int64_t haystack_tokens = 0;   // essay tokens kept
  int64_t needle_at = 0;         // essay tokens before the needle
};
// haystack: the essays concatenated (read_paul_graham_essays). The user message is
// "<document>\n{haystack with the needle}\n</document>\n\n{question}" (as scripts/demo.sh); the
// essay tokens are cut to length minus the tokens of the template, the needle and the question,
// so the prompt holds about `length` tokens (re-tokenizing at the two seams may move it by a
// few). The needle ("\n" + needle + "\n") goes after essay token int(n * depth / 100), moved
// back until the token before it ends with '.'; depth 100 appends it at the end.
NiahPrompt build_niah_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl, std::string_view haystack,
                             int length, int depth, std::string_view needle, std::string_view question);

// FNV-1a (64-bit) of the ids' little-endian bytes, as 16 hex digits.
std::string fnv1a_hex(std::span<const int32_t> ids);

}  // namespace snapkv

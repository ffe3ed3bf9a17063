#pragma once
// Token runs: the tokens of one number, one word or one identifier, which a press keeps whole
// (cfg.runs > 0), and chunks do not cut. A run starts at a token whose text begins with whitespace or after a token
// whose text ends with it; control tokens stand alone; a run longer than the cap is cut every
// `max_len` tokens. SmolLM2 writes a number one digit per token and a UUID in ~25 pieces, so a
// run holds what max pooling's kernel would cut (docs/presses.md). Sentences (cfg.sentences) are
// what chunks keep whole: a sentence ends after a token ending in . ! or ? (closing quotes or
// brackets after it allowed) that is followed by a run break, after a token holding a line break,
// and at a control token.
#include <cstdint>
#include <span>
#include <vector>

#include "snapkv/press.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

// Per vocabulary id: kBreakBefore (text begins with whitespace, or a control/unknown token) and
// kBreakAfter (text ends with whitespace other than a lone run of spaces, which leads into the
// next token; or a control/unknown token).
// kSentenceEnd: the text ends a sentence (. ! ? then closing marks, a line break, a control token)
// when a run break follows.
enum TokenRunFlag : uint8_t { kBreakBefore = 1, kBreakAfter = 2, kSentenceEnd = 4 };
std::vector<uint8_t> token_run_flags(const Tokenizer& tokenizer);

// Per position, the position its run starts at. An id outside flags stands alone.
std::vector<int32_t> token_run_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags, int max_len);

// Per position, the position its sentence starts at.
std::vector<int32_t> token_sentence_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags);

// What a press reading the prompt's tokens (PressConfig::reads_tokens) is handed per position:
// where its run (cfg.runs) and its sentence (cfg.sentences) start; each empty when not asked for.
struct TokenSpans {
  std::vector<int32_t> run_start, sentence_start;
};
TokenSpans token_spans(std::span<const int32_t> tokens, std::span<const uint8_t> flags, const PressConfig& cfg);

// Where the chunks of `chunk` entries of one head end (exclusive, ascending, the last = len), each
// moved forward to the end of the token run it would cut: every chunk holds whole runs.
std::vector<int64_t> chunk_ends_on_runs(const int32_t* pos, int64_t len, std::span<const int32_t> run_start, int chunk);

// The same with whole sentences: each chunk holds the sentences that fit in `chunk` entries
// (at least one); a sentence longer than that is cut as chunk_ends_on_runs cuts.
std::vector<int64_t> chunk_ends_on_sentences(const int32_t* pos, int64_t len, std::span<const int32_t> run_start,
                                             std::span<const int32_t> sentence_start, int chunk);

// The n entries of one head to keep, ascending, taking whole runs: entries scored kKeepAlways
// first, then runs by their best entry's score (ties: the earlier run), each while it fits; what
// room is left goes to the best single entries. pos: the entries' positions; run_start: per
// position (positions past its end stand alone).
std::vector<int32_t> top_runs(std::span<const float> scores, const int32_t* pos, std::span<const int32_t> run_start,
                              int64_t n);

}  // namespace snapkv

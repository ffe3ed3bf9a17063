#pragma once
// Token runs: the tokens of one number, one word or one identifier, which a press keeps whole
// (cfg.runs > 0), and chunks do not cut. A run starts at a token whose text begins with whitespace or after a token
// whose text ends with it; control tokens stand alone; a run longer than the cap is cut every
// `max_len` tokens. SmolLM2 writes a number one digit per token and a UUID in ~25 pieces, so a
// run holds what max pooling's kernel would cut (docs/presses.md).
#include <cstdint>
#include <span>
#include <vector>

#include "snapkv/tokenizer.h"

namespace snapkv {

// Per vocabulary id: kBreakBefore (text begins with whitespace, or a control/unknown token) and
// kBreakAfter (text ends with whitespace other than a lone run of spaces, which leads into the
// next token; or a control/unknown token).
enum TokenRunFlag : uint8_t { kBreakBefore = 1, kBreakAfter = 2 };
std::vector<uint8_t> token_run_flags(const Tokenizer& tokenizer);

// Per position, the position its run starts at. An id outside flags stands alone.
std::vector<int32_t> token_run_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags, int max_len);

// Where the chunks of `chunk` entries of one head end (exclusive, ascending, the last = len), each
// moved forward to the end of the token run it would cut: every chunk holds whole runs.
std::vector<int64_t> chunk_ends_on_runs(const int32_t* pos, int64_t len, std::span<const int32_t> run_start, int chunk);

// The n entries of one head to keep, ascending, taking whole runs: entries scored kKeepAlways
// first, then runs by their best entry's score (ties: the earlier run), each while it fits; what
// room is left goes to the best single entries. pos: the entries' positions; run_start: per
// position (positions past its end stand alone).
std::vector<int32_t> top_runs(std::span<const float> scores, const int32_t* pos, std::span<const int32_t> run_start,
                              int64_t n);

}  // namespace snapkv

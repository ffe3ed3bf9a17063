#pragma once
// The measurements behind `snapkv analyze` (snapkv/analyze.h): a window's vote, hit counts,
// overlaps, where a text lies in a prompt's tokens, and greedy continuation of a recorded prefill.
// One query's attention is attention_sums (kv/press_scores.h) over that one query.
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "kv/press_scores.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

// Per query head: the top floor(top_p * prefix) of the head's first `prefix` entries by the
// attention of the last w recorded queries, summed over them (the paper's vote, no pooling);
// ascending entry indices.
std::vector<std::vector<int32_t>> vote(const LayerInput& in, int64_t w, int64_t prefix, double top_p);

struct Hits {
  int64_t hit = 0, significant = 0;
  double rate() const;  // hit / significant; NaN when nothing is significant
};
// Adds the entries of probs above theta to h.significant, and those of them in voted (ascending
// indices) to h.hit.
void count_hits(std::span<const float> probs, std::span<const int32_t> voted, double theta, Hits& h);

// |a & b| / |a| for ascending index lists; NaN when a is empty.
double overlap_share(std::span<const int32_t> a, std::span<const int32_t> b);

// The tokens [first, last) of ids[0, end) whose text holds the first (or last) occurrence of
// text, located on the concatenated token pieces; {-1, -1} when it does not occur.
std::pair<int, int> find_text_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids, size_t end,
                                     std::string_view text, bool last);

// Extends state by up to n greedily chosen tokens (each fed, so its query is recorded), stopping
// before an end-of-generation token; returns them.
std::vector<int32_t> continue_greedily(RecordedPrefill& state, const Tokenizer& tokenizer, int n);

}  // namespace snapkv

#include "kv/token_runs.h"

#include <algorithm>
#include <numeric>

#include "kv/press_scores.h"

namespace snapkv {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The run of entry e: its position's run start (a position past run_start stands alone).
int32_t run_of(const int32_t* pos, std::span<const int32_t> run_start, int64_t e) {
  const int32_t p = pos[e];
  return p >= 0 && static_cast<size_t>(p) < run_start.size() ? run_start[p] : p;
}

}  // namespace

std::vector<uint8_t> token_run_flags(const Tokenizer& tokenizer) {
  std::vector<uint8_t> flags(static_cast<size_t>(tokenizer.n_vocab()), 0);
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    const TokenType t = tokenizer.token_type(id);
    const std::string piece = tokenizer.token_piece(id);
    if (t == TokenType::kControl || t == TokenType::kUnknown || piece.empty()) {
      flags[id] = kBreakBefore | kBreakAfter;
      continue;
    }
    // A lone space (the default tokenizer writes " " before the digits of a number) leads into
    // the next token.
    const bool spaces = piece.find_first_not_of(' ') == std::string::npos;
    flags[id] = static_cast<uint8_t>((is_space(piece.front()) ? kBreakBefore : 0) |
                                     (is_space(piece.back()) && !spaces ? kBreakAfter : 0));
  }
  return flags;
}

std::vector<int32_t> token_run_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags, int max_len) {
  const auto flag = [&](int32_t id) -> uint8_t {
    return id >= 0 && static_cast<size_t>(id) < flags.size() ? flags[id] : kBreakBefore | kBreakAfter;
  };
  std::vector<int32_t> start(tokens.size());
  for (size_t p = 0; p < tokens.size(); ++p) {
    const bool joins = p > 0 && !(flag(tokens[p]) & kBreakBefore) && !(flag(tokens[p - 1]) & kBreakAfter) &&
                       static_cast<int64_t>(p) - start[p - 1] < max_len;
    start[p] = joins ? start[p - 1] : static_cast<int32_t>(p);
  }
  return start;
}

std::vector<int64_t> chunk_ends_on_runs(const int32_t* pos, int64_t len, std::span<const int32_t> run_start, int chunk) {
  std::vector<int64_t> ends;
  for (int64_t end = 0; end < len;) {
    end = std::min(len, end + chunk);
    while (end < len && run_of(pos, run_start, end) == run_of(pos, run_start, end - 1)) ++end;
    ends.push_back(end);
  }
  return ends;
}

std::vector<int32_t> top_runs(std::span<const float> scores, const int32_t* pos, std::span<const int32_t> run_start,
                              int64_t n) {
  const auto len = static_cast<int64_t>(scores.size());
  if (n >= len) return top_k(scores, n);
  // The head's entries grouped into runs: [first, last) entries of one run, adjacent.
  struct Run {
    int64_t first, last;
    float best;
  };
  std::vector<Run> runs;
  for (int64_t e = 0; e < len; ++e) {
    if (e > 0 && run_of(pos, run_start, e) == run_of(pos, run_start, e - 1)) {
      runs.back().last = e + 1;
      runs.back().best = std::max(runs.back().best, scores[e]);
    } else {
      runs.push_back({e, e + 1, scores[e]});
    }
  }
  std::vector<char> kept(static_cast<size_t>(len), 0);
  int64_t room = n;
  for (int64_t e = 0; e < len && room > 0; ++e) {
    if (scores[e] == kKeepAlways) kept[e] = 1, --room;
  }
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return runs[a].best > runs[b].best; });
  for (size_t i = 0; i < order.size() && room > 0; ++i) {
    const Run& r = runs[order[i]];
    const int64_t cost = std::count(kept.begin() + r.first, kept.begin() + r.last, 0);
    if (cost > room) continue;
    std::fill(kept.begin() + r.first, kept.begin() + r.last, 1);
    room -= cost;
  }
  if (room > 0) {
    // The room no whole run fits: the best single entries left.
    std::vector<int32_t> left;
    std::vector<float> left_scores;
    for (int64_t e = 0; e < len; ++e) {
      if (!kept[e]) left.push_back(static_cast<int32_t>(e)), left_scores.push_back(scores[e]);
    }
    for (int32_t i : top_k(left_scores, room)) kept[left[i]] = 1;
  }
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t e = 0; e < len; ++e) {
    if (kept[e]) out.push_back(static_cast<int32_t>(e));
  }
  return out;
}

}  // namespace snapkv

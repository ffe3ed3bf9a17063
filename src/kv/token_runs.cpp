#include "kv/token_runs.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>

#include "kv/press_scores.h"

namespace snapkv {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The run (or sentence) of entry e: its position's start (a position past start stands alone).
int32_t run_of(const int32_t* pos, std::span<const int32_t> start, int64_t e) {
  const int32_t p = pos[e];
  return p >= 0 && static_cast<size_t>(p) < start.size() ? start[p] : p;
}

// Whether a piece's text ends a sentence: a line break anywhere, or . ! ? followed only by
// closing quotes or brackets and whitespace.
bool ends_sentence(const std::string& piece) {
  if (piece.find('\n') != std::string::npos) return true;
  size_t end = piece.find_last_not_of(" \t\r");
  while (end != std::string::npos && std::string_view("\"')]").find(piece[end]) != std::string_view::npos) {
    end = end == 0 ? std::string::npos : end - 1;
  }
  return end != std::string::npos && std::string_view(".!?").find(piece[end]) != std::string_view::npos;
}

uint8_t flag_of(std::span<const uint8_t> flags, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < flags.size() ? flags[id] : kBreakBefore | kBreakAfter | kSentenceEnd;
}

}  // namespace

std::vector<uint8_t> token_run_flags(const Tokenizer& tokenizer) {
  std::vector<uint8_t> flags(static_cast<size_t>(tokenizer.n_vocab()), 0);
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    const TokenType t = tokenizer.token_type(id);
    const std::string piece = tokenizer.token_piece(id);
    if (t == TokenType::kControl || t == TokenType::kUnknown || piece.empty()) {
      flags[id] = kBreakBefore | kBreakAfter | kSentenceEnd;
      continue;
    }
    // A lone space (the default tokenizer writes " " before the digits of a number) leads into
    // the next token.
    const bool spaces = piece.find_first_not_of(' ') == std::string::npos;
    flags[id] = static_cast<uint8_t>((is_space(piece.front()) ? kBreakBefore : 0) |
                                     (is_space(piece.back()) && !spaces ? kBreakAfter : 0) |
                                     (ends_sentence(piece) ? kSentenceEnd : 0));
  }
  return flags;
}

std::vector<int32_t> token_run_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags, int max_len) {
  std::vector<int32_t> start(tokens.size());
  for (size_t p = 0; p < tokens.size(); ++p) {
    const bool joins = p > 0 && !(flag_of(flags, tokens[p]) & kBreakBefore) &&
                       !(flag_of(flags, tokens[p - 1]) & kBreakAfter) && static_cast<int64_t>(p) - start[p - 1] < max_len;
    start[p] = joins ? start[p - 1] : static_cast<int32_t>(p);
  }
  return start;
}

std::vector<int32_t> token_sentence_starts(std::span<const int32_t> tokens, std::span<const uint8_t> flags) {
  std::vector<int32_t> start(tokens.size());
  for (size_t p = 0; p < tokens.size(); ++p) {
    bool ends = false;  // does the sentence end after p - 1?
    if (p > 0) {
      const uint8_t prev = flag_of(flags, tokens[p - 1]), cur = flag_of(flags, tokens[p]);
      ends = (prev & kSentenceEnd) && ((prev & kBreakAfter) || (cur & kBreakBefore));
    }
    start[p] = p > 0 && !ends ? start[p - 1] : static_cast<int32_t>(p);
  }
  return start;
}

TokenSpans token_spans(std::span<const int32_t> tokens, std::span<const uint8_t> flags, const PressConfig& cfg) {
  TokenSpans s;
  if (cfg.runs > 0) s.run_start = token_run_starts(tokens, flags, cfg.runs);
  if (cfg.sentences) s.sentence_start = token_sentence_starts(tokens, flags);
  return s;
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

std::vector<int64_t> chunk_ends_on_sentences(const int32_t* pos, int64_t len, std::span<const int32_t> run_start,
                                             std::span<const int32_t> sentence_start, int chunk) {
  std::vector<int64_t> ends;
  int64_t begin = 0;  // of the chunk being filled
  for (int64_t e = 0; e < len;) {
    int64_t stop = e + 1;  // the end of the sentence (or its rest) at e
    while (stop < len && run_of(pos, sentence_start, stop) == run_of(pos, sentence_start, e)) ++stop;
    if (stop - begin <= chunk) {
      e = stop;
    } else if (e > begin) {
      ends.push_back(begin = e);  // the sentence goes to the next chunk
    } else {  // a sentence longer than a chunk: cut it, between runs
      int64_t end = begin + chunk;
      while (end < stop && run_of(pos, run_start, end) == run_of(pos, run_start, end - 1)) ++end;
      ends.push_back(begin = e = end);
    }
  }
  if (begin < len) ends.push_back(len);
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

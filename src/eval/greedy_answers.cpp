#include "eval/greedy_answers.h"

#include <memory>
#include <numeric>

#include "engine/sampler.h"
#include "engine/speculative.h"

namespace snapkv {

namespace {

// Whether the answer so far (out, its text) goes on with tok: not at an end-of-generation token,
// nor (stop_at_newline) at a newline once the answer has text.
bool goes_on(const Tokenizer& tokenizer, const EvalCase& c, const std::string& text, int32_t tok) {
  if (tokenizer.is_eog(tok)) return false;
  return !(c.stop_at_newline && text.find_first_not_of(" \t\r\n") != std::string::npos &&
           tokenizer.token_piece(tok).find('\n') != std::string::npos);
}

}  // namespace

std::vector<std::string> answer_greedily(std::span<Sequence* const> seqs, const Tokenizer& tokenizer,
                                         const EvalCase& c, const SpeculationParams& spec,
                                         std::vector<GenerateStats>* stats) {
  const size_t n = seqs.size();
  std::vector<std::vector<int32_t>> out(n);
  std::vector<std::string> text(n);
  std::vector<std::unique_ptr<Drafter>> drafters(n);
  for (size_t k = 0; k < n; ++k) drafters[k] = make_drafter(spec, *seqs[k], nullptr);
  std::vector<GenerateStats> st(n);
  Sampler greedy(SamplingParams{});
  std::vector<int32_t> pending(n, -1);  // a verification pass's token after a rejected draft
  // Appends tok to answer k; false when the answer ends before it (not appended) or with it.
  const auto emit = [&](size_t k, int32_t tok) {
    if (!goes_on(tokenizer, c, text[k], tok)) return false;
    out[k].push_back(tok);
    text[k] = tokenizer.decode(out[k]);
    return static_cast<int>(out[k].size()) < c.max_tokens;
  };
  std::vector<size_t> active(c.max_tokens > 0 ? n : 0);
  std::iota(active.begin(), active.end(), size_t{0});
  while (!active.empty()) {
    std::vector<size_t> going;
    std::vector<StepRow> rows;
    for (const size_t k : active) {
      Sequence& s = *seqs[k];
      const int32_t tok = pending[k] >= 0 ? pending[k] : greedy_token(s.logits());
      if (!emit(k, tok)) continue;
      going.push_back(k);
      rows.push_back({&s, &greedy, drafters[k].get(), tok,
                      draft_room(s, spec.k, c.max_tokens - static_cast<int>(out[k].size())),
                      [&, k](int32_t t) { return emit(k, t); }, &st[k]});
    }
    const std::vector<int32_t> next = batched_step(rows);
    active.clear();
    for (size_t b = 0; b < going.size(); ++b) {
      pending[going[b]] = next[b];
      if (next[b] >= 0) active.push_back(going[b]);
    }
  }
  if (stats) *stats = st;
  for (std::string& t : text) {
    const size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
    t = b == std::string::npos ? "" : t.substr(b, e - b + 1);
  }
  return text;
}

}  // namespace snapkv

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
  const size_t n_vocab = n > 0 ? static_cast<size_t>(seqs[0]->model().hparams().n_vocab) : 0;
  std::vector<size_t> active(c.max_tokens > 0 ? n : 0);
  std::iota(active.begin(), active.end(), size_t{0});
  while (!active.empty()) {
    std::vector<size_t> going;
    std::vector<Sequence*> batch;
    std::vector<std::vector<int32_t>> passes;  // each sequence's token, then its drafts
    for (const size_t k : active) {
      Sequence& s = *seqs[k];
      const int32_t tok = pending[k] >= 0 ? pending[k] : greedy_token(s.logits());
      if (!emit(k, tok)) continue;
      going.push_back(k);
      batch.push_back(&s);
      const int room = std::min(c.max_tokens - static_cast<int>(out[k].size()), s.n_ctx() - s.n_past() - 1);
      passes.push_back(drafters[k] ? draft_pass(s, *drafters[k], tok, std::min(spec.k, room)) : std::vector{tok});
    }
    const std::vector<std::span<const int32_t>> rows(passes.begin(), passes.end());
    const std::vector<float> logits = Sequence::decode_batch(batch, rows);
    active.clear();
    size_t at = 0;
    for (size_t b = 0; b < going.size(); ++b) {
      const size_t k = going[b];
      const std::span<const float> own = std::span(logits).subspan(at * n_vocab, passes[b].size() * n_vocab);
      at += passes[b].size();
      if (drafters[k]) {
        pending[k] = accept_pass(*seqs[k], greedy, *drafters[k], passes[b], own,
                                 [&](int32_t tok) { return emit(k, tok); }, st[k]);
        if (pending[k] < 0) continue;
      }
      active.push_back(k);
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

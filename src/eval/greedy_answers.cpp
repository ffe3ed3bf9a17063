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
  std::vector<std::vector<int32_t>> out(seqs.size());
  std::vector<std::string> text(seqs.size());
  if (spec.mode != SpecMode::kNone) {
    Sampler greedy(SamplingParams{});
    for (size_t k = 0; k < seqs.size(); ++k) {
      Sequence& s = *seqs[k];
      const std::unique_ptr<Drafter> drafter = make_drafter(spec, s, nullptr);
      GenerateStats st;
      const auto emit = [&](int32_t tok) {
        if (!goes_on(tokenizer, c, text[k], tok)) return false;
        out[k].push_back(tok);
        text[k] = tokenizer.decode(out[k]);
        return static_cast<int>(out[k].size()) < c.max_tokens;
      };
      if (c.max_tokens > 0) {
        decode_speculatively(s, greedy, *drafter, greedy_token(s.logits()), spec.k, c.max_tokens, emit, st);
      }
      if (stats) stats->at(k) = st;
    }
  }
  std::vector<size_t> active(spec.mode == SpecMode::kNone ? seqs.size() : 0);
  std::iota(active.begin(), active.end(), size_t{0});
  for (int i = 0; i < c.max_tokens && !active.empty(); ++i) {
    std::vector<size_t> going;
    std::vector<Sequence*> batch;
    std::vector<int32_t> next;
    for (const size_t k : active) {
      const int32_t tok = greedy_token(seqs[k]->logits());
      if (!goes_on(tokenizer, c, text[k], tok)) continue;
      out[k].push_back(tok);
      text[k] = tokenizer.decode(out[k]);
      going.push_back(k);
      batch.push_back(seqs[k]);
      next.push_back(tok);
    }
    if (i + 1 < c.max_tokens) Sequence::decode_batch(batch, next);
    active = std::move(going);
  }
  for (std::string& t : text) {
    const size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
    t = b == std::string::npos ? "" : t.substr(b, e - b + 1);
  }
  return text;
}

}  // namespace snapkv

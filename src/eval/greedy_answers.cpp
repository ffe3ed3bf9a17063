#include "eval/greedy_answers.h"

#include <numeric>

#include "engine/sampler.h"

namespace snapkv {

std::vector<std::string> answer_greedily(std::span<Sequence* const> seqs, const Tokenizer& tokenizer,
                                         const EvalCase& c) {
  std::vector<std::vector<int32_t>> out(seqs.size());
  std::vector<std::string> text(seqs.size());
  std::vector<size_t> active(seqs.size());
  std::iota(active.begin(), active.end(), size_t{0});
  for (int i = 0; i < c.max_tokens && !active.empty(); ++i) {
    std::vector<size_t> going;
    std::vector<Sequence*> batch;
    std::vector<int32_t> next;
    for (const size_t k : active) {
      const int32_t tok = greedy_token(seqs[k]->logits());
      if (tokenizer.is_eog(tok)) continue;
      if (c.stop_at_newline && text[k].find_first_not_of(" \t\r\n") != std::string::npos &&
          tokenizer.token_piece(tok).find('\n') != std::string::npos) {
        continue;
      }
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

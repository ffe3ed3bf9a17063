#include "kv/reconstruction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/attention.h"
#include "util/error.h"

namespace snapkv {
namespace {

// Entries [a, b) of a head's view.
KvHeadView slice(const KvHeadView& v, int64_t a, int64_t b, int d) {
  const size_t row = static_cast<size_t>(d) * kv_type_size(v.type);
  KvHeadView s = v;
  s.n = b - a;
  s.k = static_cast<const uint8_t*>(v.k) + a * row;
  s.v = static_cast<const uint8_t*>(v.v) + a * row;
  s.pos = v.pos + a;
  return s;
}

int64_t first_at(const KvHeadView& v, int32_t pos) { return std::lower_bound(v.pos, v.pos + v.n, pos) - v.pos; }

// Watches one pass: keeps, per entry of the chunk, the largest probability of the pass's queries,
// normalized over the sinks, the chunk and the pass's own entries.
class PassObserver final : public LayerObserver {
 public:
  PassObserver(ReconstructionScores& scores, int n_head, int head_dim, int32_t begin, int32_t end,
               int32_t context_end, ThreadPool& pool)
      : scores_(scores), n_head_(n_head), d_(head_dim), begin_(begin), end_(end), context_end_(context_end),
        pool_(pool) {}

  void queries(int il, int64_t n_tok, const float* q, const int32_t* pos, const float*, KvStore& kv) override {
    if (scores_[il].empty()) return;  // a sliding-window layer
    const std::span<const KvHeadView> views = kv.layer(il);
    const size_t n_kv = views.size();
    const int n_group = n_head_ / static_cast<int>(n_kv);
    std::vector<KvHeadView> parts[3];  // sinks, chunk, the pass's own entries
    std::vector<float*> rows(n_head_);
    for (size_t h = 0; h < n_kv; ++h) {
      const KvHeadView& v = views[h];
      const int64_t chunk_at = first_at(v, begin_);
      parts[0].push_back(slice(v, 0, first_at(v, std::min<int32_t>(begin_, kReconstructSinks)), d_));
      parts[1].push_back(slice(v, chunk_at, first_at(v, end_), d_));
      parts[2].push_back(slice(v, first_at(v, context_end_), v.n, d_));
      for (int g = 0; g < n_group; ++g) {
        const size_t hq = h * n_group + g;
        rows[hq] = scores_[il][hq].data() + chunk_at;
      }
    }
    const size_t n_rows = static_cast<size_t>(n_tok) * n_head_;
    std::vector<float> lse[3];
    for (int i = 0; i < 3; ++i) {
      lse[i].resize(n_rows);
      attention_row_lse(q, pos, n_tok, n_head_, d_, parts[i], lse[i].data(), pool_);
    }
    for (size_t r = 0; r < n_rows; ++r) {
      const float m = std::max({lse[0][r], lse[1][r], lse[2][r]});
      lse[0][r] = m + std::log(std::exp(lse[0][r] - m) + std::exp(lse[1][r] - m) + std::exp(lse[2][r] - m));
    }
    attention_column_sums(q, pos, n_tok, n_head_, d_, parts[1], rows, pool_, lse[0].data(), ColumnReduce::kMax);
  }

 private:
  ReconstructionScores& scores_;
  int n_head_, d_;
  int32_t begin_, end_, context_end_;
  ThreadPool& pool_;
};

}  // namespace

ReconstructionPrompt reconstruction_prompt(const Tokenizer& tokenizer) {
  const auto ids = [&](const char* text) { return tokenizer.encode(text, /*add_bos=*/false, /*parse_special=*/false); };
  return {ids("\n\nRepeat the previous context exactly."),
          ids("\n\nRepeat the part of the previous context exactly, starting with"), ids("\n")};
}

void check_reconstructable(const KvCache& cache) {
  for (int32_t w : cache.windows()) {
    if (w > 0) {
      fail(ErrorKind::kUnsupported, "kvzip reconstructs the context after it, and this model's sliding-window "
           "layers drop the context's entries while it does; use another press");
    }
  }
}

ReconstructionScores reconstruction_scores(const Decoder& model, KvCache& cache, std::span<const int32_t> context,
                                           const ReconstructionPrompt& prompt, ThreadPool& pool) {
  if (prompt.empty()) fail(ErrorKind::kInternal, "kvzip was given no reconstruction prompt");
  check_reconstructable(cache);
  const ModelHparams& h = model.hparams();
  const int n_group = h.n_head / cache.n_head();
  ReconstructionScores scores(static_cast<size_t>(cache.n_layer()));
  for (int il = 0; il < cache.n_layer(); ++il) {
    scores[il].resize(static_cast<size_t>(h.n_head));
    for (int hq = 0; hq < h.n_head; ++hq) scores[il][hq].assign(static_cast<size_t>(cache.head_size(il, hq / n_group)), 0.0f);
  }
  const auto n = static_cast<int64_t>(context.size());
  const auto context_end = static_cast<int32_t>(n);
  std::vector<float> logits;
  for (int64_t begin = 0; begin < n; begin += kReconstructChunk) {
    const int64_t end = std::min(n, begin + kReconstructChunk);
    std::vector<int32_t> ids = begin == 0 ? prompt.first : prompt.later;
    if (begin > 0) ids.insert(ids.end(), context.begin() + (begin - kReconstructCarry), context.begin() + begin);
    ids.insert(ids.end(), prompt.suffix.begin(), prompt.suffix.end());
    ids.insert(ids.end(), context.begin() + begin, context.begin() + end);
    std::vector<int32_t> pos(ids.size());
    std::iota(pos.begin(), pos.end(), context_end);
    PassObserver observer(scores, h.n_head, h.head_dim, static_cast<int32_t>(begin), static_cast<int32_t>(end),
                          context_end, pool);
    model.forward(ids, pos, cache, LogitsMode::kNone, logits, pool, &observer);
    cache.drop_from(context_end);
  }
  return scores;
}

}  // namespace snapkv

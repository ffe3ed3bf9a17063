#include "engine/speculative.h"

#include <algorithm>
#include <vector>

#include "ops/matmul.h"
#include "util/error.h"

namespace snapkv {

std::vector<int32_t> Drafter::propose(std::span<const int32_t> history, int k) {
  if (skip_ > 0) {
    --skip_;
    return {};
  }
  return draft(history, k);
}

void Drafter::kept(int n_kept) {
  if (n_kept > 0) {
    backoff_ = 1;
    return;
  }
  skip_ = backoff_;
  backoff_ = std::min(2 * backoff_, 16);
}

std::unique_ptr<Drafter> make_drafter(const SpeculationParams& spec, const Sequence& session, Sequence* draft) {
  if (spec.mode == SpecMode::kNone) return nullptr;
  if (spec.mode == SpecMode::kPromptLookup) return prompt_lookup_drafter(spec.ngram_min, spec.ngram_max);
  if (!draft) fail(ErrorKind::kInvalidArgument, "speculation with a draft model needs a draft model (--draft-model)");
  return model_drafter(*draft);
}

std::vector<int32_t> draft_pass(const Sequence& session, Drafter& drafter, int32_t id, int k) {
  std::vector<int32_t> pass = {id};
  if (k <= 0) return pass;
  std::vector<int32_t> history = session.tokens();
  history.push_back(id);
  const std::vector<int32_t> drafts = drafter.propose(history, k);
  pass.insert(pass.end(), drafts.begin(), drafts.end());
  return pass;
}

int32_t accept_pass(Sequence& session, Sampler& sampler, Drafter& drafter, std::span<const int32_t> pass,
                    std::span<const float> rows, const std::function<bool(int32_t)>& emit, GenerateStats& st) {
  const int m = static_cast<int>(pass.size()) - 1, n_before = session.n_past() - m - 1;
  const size_t n_vocab = rows.size() / pass.size();
  const auto row = [&](int i) { return rows.subspan(i * n_vocab, n_vocab); };
  ++st.n_passes;
  st.n_drafted += m;
  // The sampler sees what it would see without speculation: row i follows pass[0..i].
  const std::span<const int32_t> seen = session.tokens();
  int i = 0;
  int32_t next = -1;
  for (; i < m; ++i) {
    const int32_t t = sampler.sample_given_draft(row(i), seen.first(n_before + 1 + i), pass[1 + i]);
    if (t != pass[1 + i]) {
      next = t;
      break;
    }
    ++st.n_accepted;
    if (!emit(t)) {
      session.truncate(n_before + 1 + i);  // as without speculation: the last token is not run
      st.n_decoded += 1 + i;
      return -1;
    }
  }
  if (m > 0) drafter.kept(i);
  if (i == m) next = sampler.sample(row(m), seen);
  if (i < m) session.truncate(n_before + 1 + i, row(i));
  st.n_decoded += 1 + i;
  return next;
}

int32_t speculate(Sequence& session, Sampler& sampler, Drafter& drafter, int32_t id, int k,
                  const std::function<bool(int32_t)>& emit, GenerateStats& st) {
  const std::vector<int32_t> pass = draft_pass(session, drafter, id, k);
  const std::vector<float> rows = session.prefill_all_logits(pass);
  return accept_pass(session, sampler, drafter, pass, rows, emit, st);
}

namespace {

// Tokens a decode step of n tokens could add without another pass over the weights.
int free_lanes(int64_t n) {
  if (n > kMatmulDecodeMaxTokens) return 0;
  return static_cast<int>((kMatmulPassTokens - n % kMatmulPassTokens) % kMatmulPassTokens);
}

}  // namespace

std::vector<int32_t> batched_step(std::span<StepRow> rows) {
  std::vector<Sequence*> batch;
  std::vector<std::vector<int32_t>> passes;  // each row's token, then its drafts
  for (const StepRow& r : rows) {
    batch.push_back(r.seq);
    passes.push_back({r.id});
  }
  int lanes = free_lanes(static_cast<int64_t>(rows.size()));
  for (size_t b = 0; b < rows.size() && lanes > 0; ++b) {
    if (!rows[b].drafter) continue;
    passes[b] = draft_pass(*rows[b].seq, *rows[b].drafter, rows[b].id, std::min(rows[b].max_drafts, lanes));
    lanes -= static_cast<int>(passes[b].size()) - 1;
  }
  const std::vector<std::span<const int32_t>> tokens(passes.begin(), passes.end());
  const std::vector<float> logits = Sequence::decode_batch(batch, tokens);
  std::vector<int32_t> next(rows.size());
  const size_t n_vocab = rows.empty() ? 0 : static_cast<size_t>(rows[0].seq->model().hparams().n_vocab);
  size_t at = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    StepRow& r = rows[b];
    const std::span<const float> own = std::span(logits).subspan(at * n_vocab, passes[b].size() * n_vocab);
    at += passes[b].size();
    if (r.drafter) {
      next[b] = accept_pass(*r.seq, *r.sampler, *r.drafter, passes[b], own, r.emit, *r.st);
    } else {
      ++r.st->n_decoded;
      next[b] = r.sampler->sample(r.seq->logits(), r.seq->tokens());
    }
  }
  return next;
}

int draft_room(const Sequence& session, int k, int tokens_left) {
  const int room = std::min({k, tokens_left, session.n_ctx() - session.n_past() - 1});
  if (!session.compressor()) return room;
  return static_cast<int>(std::min<int64_t>(room, session.compressor()->tokens_to_recompression() - 2));
}

void decode_speculatively(Sequence& session, Sampler& sampler, Drafter& drafter, int32_t id, int k, int max_tokens,
                          const std::function<bool(int32_t)>& emit, GenerateStats& st) {
  int emitted = 0;
  const std::function<bool(int32_t)> counted = [&](int32_t t) {
    const bool more = emit(t);
    ++emitted;  // past an end token too: the loop ends there anyway
    return more;
  };
  while (id >= 0 && counted(id) && session.n_past() < session.n_ctx()) {
    id = speculate(session, sampler, drafter, id, draft_room(session, k, max_tokens - emitted), counted, st);
  }
}

}  // namespace snapkv

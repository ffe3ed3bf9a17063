#include "engine/generate.h"

#include <memory>

#include "engine/sampler.h"
#include "engine/speculative.h"
#include "util/error.h"
#include "snapkv/timer.h"
#include "util/utf8.h"

namespace snapkv {

std::string SpeculationParams::validate() const {
  if (mode == SpecMode::kNone) return {};
  if (k < 1 || k > 16) return "the tokens drafted per pass (--spec-k) must be in 1..16";
  if (ngram_min < 1 || ngram_min > ngram_max || ngram_max > 16) {
    return "the prompt-lookup n-grams must satisfy 1 <= --spec-ngram-min <= --spec-ngram <= 16";
  }
  return {};
}

SpecMode parse_spec_mode(std::string_view name) {
  if (name == "none") return SpecMode::kNone;
  if (name == "prompt-lookup") return SpecMode::kPromptLookup;
  if (name == "draft") return SpecMode::kDraft;
  fail(ErrorKind::kInvalidArgument, "unknown speculation '{}': none, prompt-lookup or draft", name);
}

std::string GenerateParams::validate() const {
  if (max_tokens < 0) return "the number of tokens to generate must be >= 0";
  if (std::string err = speculation.validate(); !err.empty()) return err;
  return sampling.validate();
}

GenerateStats generate(Sequence& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       const GenerateParams& params, const TokenCallback& on_token,
                       const std::function<void(int, int)>& progress, Sequence* draft) {
  if (const std::string err = params.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const SpeculationParams& spec = params.speculation;
  const std::unique_ptr<Drafter> drafter = make_drafter(spec, session, draft);
  Sampler sampler(params.sampling);
  GenerateStats st;
  st.n_prompt = static_cast<int>(prompt.size());
  Timer timer;
  session.prefill(prompt, progress, params.compress_prompt);
  if (drafter) drafter->follow(session.tokens());  // a draft model reads the prompt too
  st.prefill_s = timer.seconds();

  Utf8Stream utf8;
  timer.reset();
  // Emits id; false when generation ends with it (an end-of-generation token is not emitted).
  const auto emit = [&](int32_t id) {
    if (params.stop_at_eog && tokenizer.is_eog(id)) {
      st.stopped_at_eog = true;
      return false;
    }
    ++st.n_generated;
    return on_token(id, utf8.push(tokenizer.token_piece(id))) && st.n_generated < params.max_tokens;
  };
  if (params.max_tokens > 0 && drafter) {
    decode_speculatively(session, sampler, *drafter, sampler.sample(session.logits(), session.tokens()), spec.k,
                         params.max_tokens, emit, st);
  } else if (params.max_tokens > 0) {
    int32_t id = sampler.sample(session.logits(), session.tokens());
    while (emit(id) && session.n_past() < session.n_ctx()) {
      session.decode(id);
      ++st.n_decoded;
      id = sampler.sample(session.logits(), session.tokens());
    }
  }
  st.decode_s = timer.seconds();
  if (const std::string rest = utf8.flush(); !rest.empty()) on_token(-1, rest);
  return st;
}

std::vector<GenerateStats> generate_batch(std::span<Sequence* const> sessions, const Tokenizer& tokenizer,
                                          std::span<const std::vector<int32_t>> prompts, const GenerateParams& params,
                                          const BatchTokenCallback& on_token) {
  if (const std::string err = params.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (sessions.size() != prompts.size()) {
    fail(ErrorKind::kInvalidArgument, "generate_batch: {} sessions but {} prompts", sessions.size(), prompts.size());
  }
  const size_t n = sessions.size();
  std::vector<std::unique_ptr<Drafter>> drafters(n);
  for (size_t b = 0; b < n; ++b) drafters[b] = make_drafter(params.speculation, *sessions[b], nullptr);
  std::vector<GenerateStats> st(n);
  std::vector<Sampler> samplers;
  std::vector<Utf8Stream> utf8(n);
  for (size_t b = 0; b < n; ++b) {
    samplers.emplace_back(params.sampling);
    st[b].n_prompt = static_cast<int>(prompts[b].size());
    Timer t;
    sessions[b]->prefill(prompts[b], {}, params.compress_prompt);
    st[b].prefill_s = t.seconds();
  }
  Timer timer;
  // Emits id to sequence b; false when it ends with it (an end-of-generation token is not emitted).
  const auto emit = [&](size_t b, int32_t id) {
    if (params.stop_at_eog && tokenizer.is_eog(id)) {
      st[b].stopped_at_eog = true;
      return false;
    }
    ++st[b].n_generated;
    return on_token(b, id, utf8[b].push(tokenizer.token_piece(id))) && st[b].n_generated < params.max_tokens;
  };
  std::vector<int32_t> next(n);
  std::vector<size_t> live;
  for (size_t b = 0; b < n; ++b) {
    next[b] = samplers[b].sample(sessions[b]->logits(), sessions[b]->tokens());
    if (params.max_tokens > 0) live.push_back(b);
  }
  while (!live.empty()) {
    std::vector<size_t> going;
    std::vector<StepRow> rows;
    for (const size_t b : live) {
      Sequence& s = *sessions[b];
      if (!emit(b, next[b]) || s.n_past() >= s.n_ctx()) {
        st[b].decode_s = timer.seconds();
        continue;
      }
      going.push_back(b);
      rows.push_back({&s, &samplers[b], drafters[b].get(), next[b],
                      draft_room(s, params.speculation.k, params.max_tokens - st[b].n_generated),
                      [&, b](int32_t t) { return emit(b, t); }, &st[b]});
    }
    const std::vector<int32_t> ids = batched_step(rows);
    live.clear();
    for (size_t i = 0; i < going.size(); ++i) {
      next[going[i]] = ids[i];
      if (ids[i] >= 0) {
        live.push_back(going[i]);
      } else {
        st[going[i]].decode_s = timer.seconds();
      }
    }
  }
  for (size_t b = 0; b < n; ++b) {
    if (const std::string rest = utf8[b].flush(); !rest.empty()) on_token(b, -1, rest);
  }
  return st;
}

}  // namespace snapkv

#pragma once
// Speculative decoding's verification step, shared by generate(), the evaluation's greedy answers
// and the server's scheduler: a drafter's tokens run through the model in one pass, and the
// sampler keeps those it agrees with (greedy: exactly the tokens decoding one at a time would give).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/drafter.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "snapkv/generate.h"

namespace snapkv {

// The drafter spec asks for (null for SpecMode::kNone). Error(kInvalidArgument) for kDraft
// without a draft sequence.
std::unique_ptr<Drafter> make_drafter(const SpeculationParams& spec, const Sequence& session, Sequence* draft);

// After id was emitted (and emit(id) said to go on): drafts up to k tokens, verifies id and them
// in one pass, emits the accepted drafts, and rolls the rejected ones back. Without a draft it
// decodes id alone. Returns the next token to emit, or -1 when emit ended generation at an
// accepted draft; then the session holds every emitted token but that one, as after decoding one
// token at a time. Adds to st's n_decoded, n_passes, n_drafted and n_accepted.
int32_t speculate(Sequence& session, Sampler& sampler, Drafter& drafter, int32_t id, int k,
                  const std::function<bool(int32_t)>& emit, GenerateStats& st);

// speculate() in two halves, for a caller that runs the passes of several sequences in one batch
// (the server): draft_pass gives the pass's tokens (id and up to k drafts); once they ran through
// session (rows: their logits [pass.size(), n_vocab]), accept_pass does the rest.
std::vector<int32_t> draft_pass(const Sequence& session, Drafter& drafter, int32_t id, int k);
int32_t accept_pass(Sequence& session, Sampler& sampler, Drafter& drafter, std::span<const int32_t> pass,
                    std::span<const float> rows, const std::function<bool(int32_t)>& emit, GenerateStats& st);

// The drafts a pass of session may hold: k at most, and never past the tokens_left before
// max_tokens or the end of the context (the pass's first token takes one entry). With a press
// that re-compresses during generation, a pass ends before the token that re-compresses, or is
// that token alone: a drafted token's query never selects what the cache keeps.
int draft_room(const Sequence& session, int k, int tokens_left);

// One sequence's part of a batched step (batched_step).
struct StepRow {
  Sequence* seq = nullptr;
  Sampler* sampler = nullptr;
  Drafter* drafter = nullptr;  // null: no speculation
  int32_t id = 0;              // the token emitted last, to run now
  int max_drafts = 0;          // drafts at most (draft_room)
  std::function<bool(int32_t)> emit;  // each accepted draft; false ends the sequence there
  GenerateStats* st = nullptr;
};

// Runs every row's token through the model in one Sequence::decode_batch step, with drafts for
// the rows that have a drafter in the lanes the step's last pass over the weights leaves free
// (a pass takes kMatmulPassTokens tokens: drafts there add no weight reads). Then each row's
// accepted drafts are emitted and its rejected ones rolled back. Returns each row's next token,
// sampled, or -1 where emit ended the row at an accepted draft.
std::vector<int32_t> batched_step(std::span<StepRow> rows);

// The decode loop with speculation: emits id, then speculate() pass after pass until emit says
// to stop, max_tokens were emitted or the context is full. Drafts never run past either.
void decode_speculatively(Sequence& session, Sampler& sampler, Drafter& drafter, int32_t id, int k, int max_tokens,
                          const std::function<bool(int32_t)>& emit, GenerateStats& st);

}  // namespace snapkv

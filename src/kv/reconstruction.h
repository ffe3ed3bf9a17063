#pragma once
// KVzip's context reconstruction (Kim et al., "KVzip: Query-Agnostic KV Cache Compression with
// Context Reconstruction"), which the kvzip press scores entries by. After a context is
// prefilled, the model is asked to repeat it, chunk by chunk: each pass runs "Repeat the
// previous context exactly." (later chunks: "... the part of the previous context exactly,
// starting with" and the previous chunk's last 8 tokens), a line break and the chunk's tokens
// after the context, and scores each entry of the chunk by the largest attention probability
// any query of the pass gives it. As kvpress's KVzipPress, the probabilities are normalized over
// the first 4 entries (only for chunks after the first), the chunk's entries and the pass's own,
// and the pass's entries are dropped after it, so every pass sits right after the context.
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

// The token ids of the reconstruction prompts.
struct ReconstructionPrompt {
  std::vector<int32_t> first;   // before the first chunk
  std::vector<int32_t> later;   // before the others (then the previous chunk's last tokens)
  std::vector<int32_t> suffix;  // between the prompt and the chunk
  bool empty() const { return first.empty(); }
};
ReconstructionPrompt reconstruction_prompt(const Tokenizer& tokenizer);

inline constexpr int64_t kReconstructChunk = 2048;  // context tokens per pass
inline constexpr int64_t kReconstructCarry = 8;     // of the previous chunk, quoted in the later prompt
inline constexpr int64_t kReconstructSinks = 4;     // first entries in the later passes' softmax

// Per layer and query head, per entry of its KV head (as cache holds them before the call): the
// largest probability a reconstructing query gave it; empty for sliding-window layers.
using ReconstructionScores = std::vector<std::vector<std::vector<float>>>;

// Error(kUnsupported) for a cache with sliding-window layers: they would drop the context's
// entries while the passes run.
void check_reconstructable(const KvCache& cache);

// Runs the reconstruction of context (the tokens at positions 0.. whose entries cache holds)
// through model; cache is as before when it returns. check_reconstructable() first.
ReconstructionScores reconstruction_scores(const Decoder& model, KvCache& cache, std::span<const int32_t> context,
                                           const ReconstructionPrompt& prompt, ThreadPool& pool);

}  // namespace snapkv

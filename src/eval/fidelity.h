#pragma once
// Fidelity of KV-cache compression, independent of any task: a prompt of L tokens is prefilled
// once, pressed by every press at every capacity, and the next n_eval tokens of the same text are
// run on each pressed cache and on the full one. Per cell (L, press, capacity) we report how far
// the next-token distributions move: mean KL(P_full || P_press), top-1 agreement, and the increase
// of the negative log-likelihood of the text's actual next tokens.
//
// Every one of the n_eval continuation positions is scored by all three metrics: the text is
// read one token further (L + n_eval + 1 tokens), so the last position has a known next token
// too. The continuation is fed in one forward call; its tokens attend to the (pressed) prompt
// entries and to each other causally, exactly as if they were decoded one by one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "snapkv/tokenizer.h"
#include "model/model.h"
#include "snapkv/press.h"
#include "util/thread_pool.h"

namespace snapkv {

struct FidelityParams {
  std::vector<int> lengths = {2048, 4096, 7168};   // prompt lengths L
  std::vector<int> capacities = {128, 256, 512, 1024};
  std::vector<std::string> presses = press_names();  // every registered press
  int n_eval = 256;       // continuation tokens scored after each prompt
  KvType kv_type = KvType::kF16;
  PressConfig base;       // window, kernel, pool, ...; press and capacity are set per cell

  // A readable error (empty when valid): empty or non-positive lists, unknown presses, press
  // options PressConfig::validate rejects at some capacity, per_query_head (needs a replicated
  // cache), or L + n_eval over n_ctx (the model's context; 0 = unchecked).
  std::string validate(int n_ctx = 0) const;
  // The press configuration of one cell: base with this press and capacity (ratio and
  // re-compression off: every cell is a fixed capacity, and nothing is decoded).
  PressConfig cell_config(const std::string& press, int capacity) const;
  // Tokens of text needed: the longest prompt, its continuation and the last target.
  int64_t tokens_needed() const;
};

struct FidelityCell {
  int length = 0;
  std::string press;
  int capacity = 0;
  int n_scored = 0;            // positions scored (n_eval)
  double kl_mean = 0;          // mean over positions of KL(P_full || P_press), nats
  double kl_max = 0;           // the largest per-position KL
  double top1 = 0;             // share of positions whose argmax agrees, in [0, 1]
  double nll_full = 0;         // mean -log P_full(actual next token), nats
  double nll_press = 0;        // the same under the pressed cache
  double nll_delta() const { return nll_press - nll_full; }
  size_t kept_bytes = 0, full_bytes = 0;      // KV bytes of the prompt after / before pressing
  int64_t kept_entries = 0, full_entries = 0;  // over all layers and KV heads
  double seconds = 0;          // pressing, continuation forward and scoring of this cell
};

// Per-position comparison of two logit rows against the reference. Exposed for tests.
struct LogitComparison {
  double kl = 0;              // KL(softmax(ref) || softmax(test)), natural log, >= 0
  bool same_top1 = false;     // argmax equal (ties: the lowest id)
  double nll_ref = 0, nll_test = 0;  // -log P(target) under each
};
LogitComparison compare_logits(std::span<const float> ref, std::span<const float> test, int32_t target);

// The Paul Graham essays of the evaluation data (<data_dir>/niah_paulgraham/PaulGrahamEssays/*.txt),
// sorted by file name and concatenated without separators (as the needle-in-a-haystack haystack).
// Error(kBadFile) naming the folder when it is missing or holds no essay. *n_files: essays read.
std::string read_paul_graham_essays(const std::string& data_dir, size_t* n_files = nullptr);

// The first n tokens of text (fewer when the text is shorter), with the model's BOS rule and no
// special-token parsing, without tokenizing all of a long text: growing character prefixes are
// encoded until they yield a margin of tokens past n, so the cut cannot change the first n.
std::vector<int32_t> encode_prefix(const Tokenizer& tokenizer, std::string_view text, int64_t n);

// What run_fidelity reports while it works: a prefill starts (press empty) or a cell is done.
struct FidelityProgress {
  int length = 0;
  std::string press;         // empty: the prefill of `length` is starting
  int capacity = 0;
  int cells_done = 0, cells_total = 0;
  double elapsed_s = 0;
  const FidelityCell* cell = nullptr;  // the cell just done
};

// Runs every cell, in the order L, then press, then capacity (one prefill per L). tokens must hold
// at least params.tokens_needed() ids. Throws Error(kInvalidArgument) when params are invalid for
// the model, Error(kOutOfRange) when tokens are too few.
std::vector<FidelityCell> run_fidelity(const Decoder& model, std::span<const int32_t> tokens,
                                       const FidelityParams& params, ThreadPool& pool,
                                       const std::function<void(const FidelityProgress&)>& progress = {});

}  // namespace snapkv

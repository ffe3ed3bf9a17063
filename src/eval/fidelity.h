#pragma once
// The engine side of the fidelity evaluation (snapkv/eval.h, evaluate_fidelity): how far the
// next-token distributions move when the prompt's cache is pressed.
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

#include "kv/press_inputs.h"
#include "model/model.h"
#include "snapkv/eval.h"
#include "snapkv/tokenizer.h"
#include "util/thread_pool.h"

namespace snapkv {

// Per-position comparison of two logit rows against the reference. Exposed for tests.
struct LogitComparison {
  double kl = 0;              // KL(softmax(ref) || softmax(test)), natural log, >= 0
  bool same_top1 = false;     // argmax equal (ties: the lowest id)
  double nll_ref = 0, nll_test = 0;  // -log P(target) under each
};
LogitComparison compare_logits(std::span<const float> ref, std::span<const float> test, int32_t target);

// The first n tokens of text (fewer when the text is shorter), with the model's BOS rule and no
// special-token parsing, without tokenizing all of a long text: growing character prefixes are
// encoded until they yield a margin of tokens past n, so the cut cannot change the first n.
std::vector<int32_t> encode_prefix(const Tokenizer& tokenizer, std::string_view text, int64_t n);

// Runs every cell, in the order L, then press, then capacity (one prefill per L). tokens must hold
// at least params.tokens_needed() ids. Throws Error(kInvalidArgument) when params are invalid for
// the model, Error(kOutOfRange) when tokens are too few. inputs: the model's
// press_inputs().
std::vector<FidelityCell> run_fidelity(const Decoder& model, const PressInputs& inputs, std::span<const int32_t> tokens,
                                       const FidelityParams& params, ThreadPool& pool,
                                       const std::function<void(const FidelityProgress&)>& progress = {});

}  // namespace snapkv

#include "eval/recorded_prefill.h"

#include <numeric>

#include "kv/compressor.h"
#include "kv/token_runs.h"
#include "util/error.h"

namespace snapkv {

RecordedPrefill::RecordedPrefill(const Decoder& model, KvType type, int64_t window, PressNeeds needs, ThreadPool& pool)
    : model_(&model),
      pool_(&pool),
      full_(model.hparams().n_layer, model.hparams().n_head_kv, model.hparams().head_dim, type, 1,
            model.hparams().layer_window),
      recorder_(model.hparams().n_layer, model.hparams().n_head, model.hparams().head_dim, window, needs,
                model.hparams().rope, pool) {}

RecordedPrefill::RecordedPrefill(const Decoder& model, std::span<const int32_t> tokens, KvType type, int64_t window,
                                 PressNeeds needs, ThreadPool& pool)
    : RecordedPrefill(model, type, window, needs, pool) {
  extend(tokens);
}

void RecordedPrefill::extend(std::span<const int32_t> tokens) {
  if (tokens.empty()) return;
  const auto first = static_cast<int32_t>(tokens_.size());
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), first);
  recorder_.begin(static_cast<int64_t>(tokens.size()), first,
                  first == 0 ? LayerRecorder::Call::kFresh : LayerRecorder::Call::kExtend);
  model_->forward(tokens, pos, full_, LogitsMode::kLast, logits_, *pool_, &recorder_);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  score_memo_.clear();
  reconstructed_.clear();
}

KvCache RecordedPrefill::pressed(const Press& press, std::vector<LayerKept>* kept, const PressInputs* inputs) const {
  const PressConfig& cfg = press.config();
  if (cfg.gqa == GqaReduce::kPerQueryHead && cfg.compresses()) {
    fail(ErrorKind::kUnsupported, "per_query_head needs a replicated cache; run it with snapkv run instead");
  }
  const bool reconstructs = press.needs().reconstruct && cfg.compresses();
  require_press_inputs(press, inputs);
  const TokenSpans spans = cfg.reads_tokens() ? token_spans(tokens_, inputs->run_flags, cfg) : TokenSpans{};
  KvCache c = full_;
  if (reconstructs && reconstructed_.empty()) {
    reconstructed_ = reconstruction_scores(*model_, c, tokens_, inputs->reconstruction, *pool_);
  }
  if (kept) kept->assign(c.n_layer(), {});
  score_memo_.resize(static_cast<size_t>(c.n_layer()));
  for (int il = 0; il < c.n_layer(); ++il) {
    LayerInput in = recorder_.input(il, c.layer(il));
    in.score_memo = &score_memo_[static_cast<size_t>(il)];
    in.run_start = spans.run_start;
    in.sentence_start = spans.sentence_start;
    if (reconstructs) in.observed = reconstructed_[il];
    const LayerKept k = press_layer(press, c, il, in, *model_);
    if (kept) (*kept)[il] = k;
  }
  return c;
}

std::unique_ptr<Sequence> RecordedPrefill::sequence(const Press* press, const PressInputs& inputs, int n_ctx) const {
  const bool evicts = press && recompresses(*press);
  const SequenceOptions options = evicts ? SequenceOptions{full_.type(), press->config(), &inputs}
                                         : SequenceOptions{full_.type()};
  auto seq = std::make_unique<Sequence>(*model_, n_ctx, *pool_, options);
  std::vector<WindowQueries> windows;
  for (int il = 0; evicts && il < full_.n_layer(); ++il) windows.push_back(recorder_.window(il));
  seq->adopt(press ? pressed(*press, nullptr, &inputs) : full_, tokens_, logits_, windows);
  return seq;
}

}  // namespace snapkv

// analyze_pooling (snapkv/analyze.h): retrieval with pooling kernels 1..k at fixed budgets (the
// paper's Fig. 8), and what each selection keeps of the answer's tokens in the context.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>

#include "api/impl.h"
#include "engine/sequence.h"
#include "eval/analysis/analysis_cases.h"
#include "eval/analysis/observation.h"
#include "eval/greedy_answers.h"
#include "kv/press.h"
#include "snapkv/timer.h"
#include "util/error.h"

namespace snapkv {

std::string PoolingOptions::validate() const {
  if (const std::string err = input.validate(); !err.empty()) return err;
  if (kernels.empty() || capacities.empty()) return "the lists of kernels and capacities must not be empty";
  if (!press.compresses()) return "the pooling analysis needs a press that compresses, not 'full'";
  if (max_tokens < 0) return fmt::format("the answer tokens must be 0 (the case's) or positive, got {}", max_tokens);
  for (const int k : kernels) {
    for (const int c : capacities) {
      PressConfig pc = press;
      pc.kernel = k;
      pc.capacity = c;
      if (std::string err = pc.validate(); !err.empty()) return err;
    }
  }
  return {};
}

PoolingCell PoolingResult::mean(int kernel, int capacity) const {
  PoolingCell m;
  m.kernel = kernel;
  m.capacity = capacity;
  int n = 0, found = 0;
  for (const PoolingCell& c : cells) {
    if (c.kernel != kernel || c.capacity != capacity) continue;
    ++n;
    m.score += c.score;
    if (c.answer_tokens == 0) continue;
    ++found;
    m.answer_tokens += c.answer_tokens;
    m.answer_kept += c.answer_kept;
    m.answer_whole += c.answer_whole;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.score = n ? m.score / n : nan;
  m.answer_kept = found ? m.answer_kept / found : nan;
  m.answer_whole = found ? m.answer_whole / found : nan;
  m.answer_tokens = found ? m.answer_tokens / found : 0;
  return m;
}

namespace {

// The shares of the answer's tokens [a.first, a.second) that a pressed cache keeps, over layers x
// KV heads: the mean kept share, and the share of heads keeping them all.
std::pair<double, double> answer_kept(const KvCache& cache, std::pair<int, int> a) {
  double kept = 0, whole = 0;
  int heads = 0;
  const double span = a.second - a.first;
  for (int il = 0; il < cache.n_layer(); ++il) {
    for (const KvHeadView& h : cache.layer(il)) {
      const int32_t* lo = std::lower_bound(h.pos, h.pos + h.n, a.first);
      const int32_t* hi = std::lower_bound(lo, h.pos + h.n, a.second);
      const double share = static_cast<double>(hi - lo) / span;
      kept += share;
      whole += share == 1.0 ? 1 : 0;
      ++heads;
    }
  }
  return {kept / heads, whole / heads};
}

}  // namespace

PoolingResult analyze_pooling(const Model& model, const PoolingOptions& o, const AnalyzeProgressFn& progress) {
  if (const std::string err = o.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const AnalysisCases ac = analysis_cases(model, o.input, std::max(o.max_tokens, 64));
  const Decoder& decoder = *model.impl().decoder;
  ThreadPool& pool = model.impl().threads();
  const Tokenizer& tokenizer = model.tokenizer();
  PoolingResult r;
  r.model = model.info().name;
  r.score_name = ac.suite ? ac.suite->score_name() : "contains the answer x100";
  r.score_max = ac.suite ? ac.suite->score_max() : 100;

  std::vector<std::unique_ptr<Press>> presses;
  int64_t window = 1;
  PressNeeds needs;
  for (const int k : o.kernels) {
    for (const int cap : o.capacities) {
      PressConfig pc = o.press;
      pc.kernel = k;
      pc.capacity = cap;
      pc.ratio = 0;
      pc.recompress = 0;
      presses.push_back(make_press(pc));
      window = std::max<int64_t>(window, presses.back()->window());
      needs |= presses.back()->needs();
    }
  }
  const int total = static_cast<int>(ac.cases.size());
  Timer t;
  int done = 0;
  const auto tell = [&](const std::string& what) {
    if (progress) progress({what, done, total, t.seconds()});
  };
  for (EvalCase c : ac.cases) {
    if (o.max_tokens > 0) c.max_tokens = o.max_tokens;
    const EvalPrompt prompt = render(model, ac, c, QuestionPlacement::kEnd);
    tell(fmt::format("{}: prefill of {} tokens", c.id, prompt.ids.size()));
    RecordedPrefill state(decoder, o.input.kv_type, window, needs, pool);
    state.extend(prompt.ids);
    std::pair<int, int> span{-1, -1};
    for (const std::string& a : c.references) {
      if (span.first >= 0) break;
      span = find_text_tokens(tokenizer, prompt.ids, prompt.ids.size(), a, /*last=*/false);
    }
    tell(fmt::format("{}: {} presses answering", c.id, presses.size()));
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<Sequence*> batch;
    for (const auto& press : presses) {
      KvCache pressed = state.pressed(*press, nullptr, &model.impl().press_inputs);
      PoolingCell cell;
      cell.case_id = c.id;
      cell.kernel = press->config().kernel;
      cell.capacity = press->config().capacity;
      if (span.first >= 0) {
        cell.answer_tokens = span.second - span.first;
        std::tie(cell.answer_kept, cell.answer_whole) = answer_kept(pressed, span);
      }
      r.cells.push_back(cell);
      const int n_ctx = static_cast<int>(prompt.ids.size()) + c.max_tokens;
      seqs.push_back(std::make_unique<Sequence>(decoder, n_ctx, pool, SequenceOptions{o.input.kv_type, {}}));
      seqs.back()->adopt(std::move(pressed), prompt.ids, state.last_logits());
      batch.push_back(seqs.back().get());
    }
    const std::vector<std::string> answers = answer_greedily(batch, tokenizer, c);
    for (size_t i = 0; i < answers.size(); ++i) {
      PoolingCell& cell = r.cells[r.cells.size() - answers.size() + i];
      cell.answer = answers[i];
      cell.score = analysis_score(ac, c, answers[i]);
    }
    ++done;
  }
  tell("");
  return r;
}

}  // namespace snapkv

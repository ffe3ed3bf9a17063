// analyze_hit_rate (snapkv/analyze.h): the paper's hit rate (Sec. 3, Figs. 2 and 3), per layer and
// generation window, on the full cache.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "api/impl.h"
#include "eval/analysis/analysis_cases.h"
#include "eval/analysis/observation.h"
#include "snapkv/timer.h"
#include "util/error.h"

namespace snapkv {

std::string HitRateOptions::validate() const {
  if (const std::string err = input.validate(); !err.empty()) return err;
  if (window < 1) return fmt::format("the observation window must be at least 1, got {}", window);
  if (!(top_p > 0 && top_p <= 1)) return fmt::format("top p must be in (0, 1], got {}", top_p);
  if (!(theta >= 0 && theta < 1)) return fmt::format("theta must be in [0, 1), got {}", theta);
  if (gen_windows < 1 || gen_window_size < 1) {
    return fmt::format("generation windows ({}) and their size ({}) must be at least 1", gen_windows, gen_window_size);
  }
  if (static_cast<int64_t>(gen_windows) * gen_window_size > 65536) return "more than 65,536 generated tokens";
  if (placements.empty()) return "no question placement";
  for (const QuestionPlacement p : placements) {
    if (p == QuestionPlacement::kAgnostic) return "the hit rate places the question first or last, not apart";
  }
  return {};
}

namespace {

// Mean of the non-NaN values of each layer over the rows picked.
template <typename Pick>
std::vector<double> layer_means(const std::vector<HitRateCase>& cases, int n_layer, Pick pick) {
  std::vector<double> sum(n_layer, 0.0), n(n_layer, 0.0);
  for (const HitRateCase& c : cases) {
    for (size_t w = 0; w < c.hit_rate.size(); ++w) {
      if (!pick(c, static_cast<int>(w))) continue;
      for (int il = 0; il < n_layer; ++il) {
        if (std::isnan(c.hit_rate[w][il])) continue;
        sum[il] += c.hit_rate[w][il];
        n[il] += 1;
      }
    }
  }
  for (int il = 0; il < n_layer; ++il) sum[il] = n[il] ? sum[il] / n[il] : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

}  // namespace

std::vector<double> HitRateResult::mean(const std::string& placement, int gen_window) const {
  return layer_means(cases, n_layer,
                     [&](const HitRateCase& c, int w) { return c.placement == placement && w == gen_window; });
}

std::vector<double> HitRateResult::mean(const std::string& placement) const {
  return layer_means(cases, n_layer, [&](const HitRateCase& c, int) { return c.placement == placement; });
}

HitRateResult analyze_hit_rate(const Model& model, const HitRateOptions& o, const AnalyzeProgressFn& progress) {
  if (const std::string err = o.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const int n_gen = o.gen_windows * o.gen_window_size;
  const AnalysisCases ac = analysis_cases(model, o.input, n_gen);
  const Decoder& decoder = *model.impl().decoder;
  ThreadPool& pool = model.impl().threads();
  HitRateResult r;
  r.model = model.info().name;
  r.n_layer = decoder.hparams().n_layer;
  const int total = static_cast<int>(ac.cases.size() * o.placements.size());
  Timer t;
  const auto tell = [&](const std::string& what) {
    if (progress) progress({what, static_cast<int>(r.cases.size()), total, t.seconds()});
  };
  for (const QuestionPlacement placement : o.placements) {
    for (const EvalCase& c : ac.cases) {
      HitRateCase hc;
      hc.id = c.id;
      hc.placement = placement_name(placement);
      const EvalPrompt prompt = render(model, ac, c, placement);
      hc.prompt_tokens = static_cast<int>(prompt.ids.size());
      if (hc.prompt_tokens <= o.window) {
        fail(ErrorKind::kInvalidArgument, "case {}: {} prompt tokens leave no prefix before the window of {}", c.id,
             hc.prompt_tokens, o.window);
      }
      tell(fmt::format("{} {}: prefill of {} tokens", c.id, hc.placement, hc.prompt_tokens));
      RecordedPrefill state(decoder, o.input.kv_type, std::max(o.window, n_gen), PressNeeds{}, pool);
      state.extend(prompt.ids);
      const int64_t prefix = hc.prompt_tokens - o.window;
      std::vector<std::vector<std::vector<int32_t>>> votes(r.n_layer);
      for (int il = 0; il < r.n_layer; ++il) votes[il] = vote(state.input(il), o.window, prefix, o.top_p);

      tell(fmt::format("{} {}: generating {} tokens", c.id, hc.placement, n_gen));
      const std::vector<int32_t> gen = continue_greedily(state, model.tokenizer(), n_gen);
      hc.generated = static_cast<int>(gen.size());
      // A window that generation reached in part counts the tokens it has.
      const size_t n_win = (gen.size() + o.gen_window_size - 1) / o.gen_window_size;
      std::vector<std::vector<Hits>> hits(n_win, std::vector<Hits>(r.n_layer));
      tell(fmt::format("{} {}: attention of {} generated tokens", c.id, hc.placement, gen.size()));
      for (int il = 0; il < r.n_layer; ++il) {
        const LayerInput in = state.input(il);
        const int64_t first = in.n_window - static_cast<int64_t>(gen.size());
        for (size_t i = 0; i < gen.size(); ++i) {
          const HeadScores p = attention_sums(in, first + static_cast<int64_t>(i), 1);  // one query's attention
          Hits& h = hits[i / o.gen_window_size][il];
          for (size_t qh = 0; qh < p.size(); ++qh) {
            count_hits(std::span<const float>(p[qh]).first(static_cast<size_t>(prefix)), votes[il][qh], o.theta, h);
          }
        }
      }
      for (const std::vector<Hits>& w : hits) {
        hc.hit_rate.emplace_back();
        hc.significant.emplace_back();
        for (const Hits& h : w) {
          hc.hit_rate.back().push_back(h.rate());
          hc.significant.back().push_back(h.significant);
        }
      }
      r.cases.push_back(std::move(hc));
    }
  }
  tell("");
  return r;
}

}  // namespace snapkv

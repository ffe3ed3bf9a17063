// analyze_overlap (snapkv/analyze.h): how much the positions voted for by different questions
// (and their answers) on one document have in common, per layer (the paper's Fig. 4).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "api/impl.h"
#include "eval/analysis/analysis_cases.h"
#include "eval/analysis/observation.h"
#include "snapkv/timer.h"
#include "util/error.h"

namespace snapkv {

std::string OverlapOptions::validate() const {
  if (const std::string err = input.validate(); !err.empty()) return err;
  if (!(top_p > 0 && top_p <= 1)) return fmt::format("top p must be in (0, 1], got {}", top_p);
  if (answer_tokens < 0 || answer_tokens > 4096) {
    return fmt::format("answer tokens must be between 0 and 4096, got {}", answer_tokens);
  }
  return {};
}

std::vector<double> OverlapResult::mean() const {
  std::vector<double> sum(n_layer, 0.0), n(n_layer, 0.0);
  for (const OverlapDocument& d : documents) {
    for (int il = 0; il < n_layer; ++il) {
      if (std::isnan(d.overlap[il])) continue;
      sum[il] += d.overlap[il];
      n[il] += 1;
    }
  }
  for (int il = 0; il < n_layer; ++il) sum[il] = n[il] ? sum[il] / n[il] : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

OverlapResult analyze_overlap(const Model& model, const OverlapOptions& o, const AnalyzeProgressFn& progress) {
  if (const std::string err = o.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const AnalysisCases ac = analysis_cases(model, o.input, o.answer_tokens);
  const Decoder& decoder = *model.impl().decoder;
  ThreadPool& pool = model.impl().threads();
  OverlapResult r;
  r.model = model.info().name;
  r.n_layer = decoder.hparams().n_layer;
  r.chance = o.top_p;

  // Documents: the cases sharing a context, in the order of their first case.
  std::vector<std::vector<const EvalCase*>> docs;
  std::map<std::string, size_t> doc_of;
  for (const EvalCase& c : ac.cases) {
    const auto [it, fresh] = doc_of.emplace(c.context, docs.size());
    if (fresh) docs.emplace_back();
    docs[it->second].push_back(&c);
  }
  std::erase_if(docs, [](const auto& d) { return d.size() < 2; });
  if (docs.empty()) {
    fail(ErrorKind::kInvalidArgument,
         "no document has two questions: the overlap needs several cases with the same context (e.g. the leval "
         "suite, or one context file with a questions file)");
  }
  int total = 0, done = 0;
  for (const auto& d : docs) total += static_cast<int>(d.size());
  Timer t;
  const auto tell = [&](const std::string& what) {
    if (progress) progress({what, done, total, t.seconds()});
  };

  for (const auto& doc : docs) {
    // The document is the prompt before the question (the question-agnostic rendering's split),
    // prefilled once; each question and its answer continue a copy of it.
    std::vector<EvalPrompt> prompts;
    int64_t window = 1;
    for (const EvalCase* c : doc) {
      prompts.push_back(render(model, ac, *c, QuestionPlacement::kAgnostic));
      window = std::max<int64_t>(window, static_cast<int64_t>(prompts.back().ids.size() - prompts.back().split) +
                                             o.answer_tokens);
    }
    OverlapDocument od;
    od.id = doc.front()->id;
    const std::span<const int32_t> head = std::span<const int32_t>(prompts.front().ids).first(prompts.front().split);
    od.context_tokens = static_cast<int>(head.size());
    tell(fmt::format("{}: prefill of the document ({} tokens)", od.id, head.size()));
    RecordedPrefill document(decoder, o.input.kv_type, window, PressNeeds{}, pool);
    document.extend(head);
    std::vector<std::vector<std::vector<std::vector<int32_t>>>> votes;  // [question][layer][head]
    for (size_t q = 0; q < doc.size(); ++q) {
      const EvalPrompt& p = prompts[q];
      if (!std::equal(head.begin(), head.end(), p.ids.begin(), p.ids.begin() + static_cast<int64_t>(p.split))) {
        fail(ErrorKind::kInternal, "case {}: the document renders to other tokens than in case {}", doc[q]->id, od.id);
      }
      tell(fmt::format("{}: question and {} answer tokens", doc[q]->id, o.answer_tokens));
      RecordedPrefill state = document;
      state.extend(std::span<const int32_t>(p.ids).subspan(p.split));
      const std::vector<int32_t> answer = continue_greedily(state, model.tokenizer(), o.answer_tokens);
      const int64_t w = static_cast<int64_t>(p.ids.size() - p.split + answer.size());
      auto& v = votes.emplace_back(r.n_layer);
      for (int il = 0; il < r.n_layer; ++il) v[il] = vote(state.input(il), w, od.context_tokens, o.top_p);
      od.questions.push_back(doc[q]->id);
      ++done;
    }
    od.overlap.assign(r.n_layer, 0.0);
    for (int il = 0; il < r.n_layer; ++il) {
      double sum = 0;
      int n = 0;
      for (size_t a = 0; a < votes.size(); ++a) {
        for (size_t b = 0; b < votes.size(); ++b) {
          if (a == b) continue;
          for (size_t h = 0; h < votes[a][il].size(); ++h) {
            const double s = overlap_share(votes[a][il][h], votes[b][il][h]);
            if (std::isnan(s)) continue;
            sum += s;
            ++n;
          }
        }
      }
      od.overlap[il] = n ? sum / n : std::numeric_limits<double>::quiet_NaN();
    }
    r.documents.push_back(std::move(od));
  }
  tell("");
  return r;
}

}  // namespace snapkv

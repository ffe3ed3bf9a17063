// analyze_map (snapkv/analyze.h): the positions a press keeps per layer and KV head, for one prompt.
#include <fmt/format.h>

#include <algorithm>

#include "api/impl.h"
#include "eval/analysis/analysis_cases.h"
#include "eval/analysis/observation.h"
#include "kv/press.h"
#include "util/error.h"

namespace snapkv {

std::string MapOptions::validate() const {
  if (const std::string err = input.validate(); !err.empty()) return err;
  return press.validate();
}

KeptMap analyze_map(const Model& model, const MapOptions& o) {
  if (const std::string err = o.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const AnalysisCases ac = analysis_cases(model, o.input, 0);
  const auto it = o.case_id.empty() ? ac.cases.begin()
                                    : std::find_if(ac.cases.begin(), ac.cases.end(),
                                                   [&](const EvalCase& c) { return c.id == o.case_id; });
  if (it == ac.cases.end()) fail(ErrorKind::kInvalidArgument, "no case is named '{}'", o.case_id);
  const EvalCase& c = *it;
  const Decoder& decoder = *model.impl().decoder;
  const auto press = make_press(o.press);
  const EvalPrompt prompt = render(model, ac, c, QuestionPlacement::kEnd);
  RecordedPrefill state(decoder, o.input.kv_type, press->window(), press->needs(),
                        model.impl().threads());
  state.extend(prompt.ids);
  const KvCache pressed = state.pressed(*press, nullptr, &model.impl().press_inputs);

  KeptMap m;
  m.model = model.info().name;
  m.case_id = c.id;
  m.press = o.press.describe();
  m.prompt_tokens = static_cast<int>(prompt.ids.size());
  m.n_layer = pressed.n_layer();
  m.n_head_kv = decoder.hparams().n_head_kv;
  for (int il = 0; il < m.n_layer; ++il) {
    auto& layer = m.kept.emplace_back();
    for (const KvHeadView& h : pressed.layer(il)) layer.emplace_back(h.pos, h.pos + h.n);
  }
  const Tokenizer& tok = model.tokenizer();
  m.question = find_text_tokens(tok, prompt.ids, prompt.ids.size(), c.question, /*last=*/true);
  for (const std::string& a : c.references) {
    if (m.answer.first >= 0) break;
    m.answer = find_text_tokens(tok, prompt.ids, prompt.ids.size(), a, /*last=*/false);
  }
  return m;
}

}  // namespace snapkv

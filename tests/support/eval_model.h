#pragma once
// The default model's tokenizer and chat template for the evaluation-suite tests, and a case's
// prompt tokens as `snapkv eval` renders them (render_eval_prompt).
#include <cstdint>
#include <memory>

#include "snapkv/chat.h"
#include "eval/eval_prompt.h"
#include "eval/suite.h"
#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "support/paths.h"

namespace snapkv::test {

struct EvalModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  ChatTemplate tmpl;
};

inline const EvalModel& eval_model() {
  static const EvalModel m = [] {
    EvalModel r;
    r.file = GgufFile::open(default_model_path());
    r.tok = Tokenizer::from_gguf(*r.file);
    r.tmpl = chat_template_from_jinja(r.file->get_string("tokenizer.chat_template", ""));
    return r;
  }();
  return m;
}

inline int64_t placed_tokens(const EvalCase& c, QuestionPlacement placement) {
  const EvalModel& m = eval_model();
  return static_cast<int64_t>(render_eval_prompt(*m.tok, m.tmpl, c, placement).ids.size());
}
inline int64_t rendered_tokens(const EvalCase& c) { return placed_tokens(c, QuestionPlacement::kEnd); }

}  // namespace snapkv::test

#include "engine/generate.h"

#include "engine/sampler.h"
#include "util/error.h"
#include "snapkv/timer.h"
#include "util/utf8.h"

namespace snapkv {

std::string GenerateParams::validate() const {
  if (max_tokens < 0) return "the number of tokens to generate must be >= 0";
  return sampling.validate();
}

GenerateStats generate(Sequence& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       const GenerateParams& params, const TokenCallback& on_token,
                       const std::function<void(int, int)>& progress) {
  if (const std::string err = params.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  Sampler sampler(params.sampling);
  GenerateStats st;
  st.n_prompt = static_cast<int>(prompt.size());
  Timer timer;
  session.prefill(prompt, progress, params.compress_prompt);
  st.prefill_s = timer.seconds();

  Utf8Stream utf8;
  timer.reset();
  for (int i = 0; i < params.max_tokens; ++i) {
    const int32_t id = sampler.sample(session.logits(), session.tokens());
    if (params.stop_at_eog && tokenizer.is_eog(id)) {
      st.stopped_at_eog = true;
      break;
    }
    ++st.n_generated;
    const bool more = on_token(id, utf8.push(tokenizer.token_piece(id)));
    if (!more || i + 1 == params.max_tokens || session.n_past() >= session.n_ctx()) break;
    session.decode(id);
    ++st.n_decoded;
  }
  st.decode_s = timer.seconds();
  if (const std::string rest = utf8.flush(); !rest.empty()) on_token(-1, rest);
  return st;
}

}  // namespace snapkv

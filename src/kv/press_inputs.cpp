#include "kv/press_inputs.h"

#include "kv/token_runs.h"
#include "util/error.h"

namespace snapkv {

PressInputs press_inputs(const Tokenizer& tokenizer) {
  return {token_run_flags(tokenizer), reconstruction_prompt(tokenizer)};
}

void require_press_inputs(const Press& press, const PressInputs* inputs) {
  if (!inputs && (press.config().reads_tokens() || press.needs().reconstruct)) {
    fail(ErrorKind::kInternal, "press {} reads the prompt's tokens but was given no press inputs", press.config().press);
  }
}

}  // namespace snapkv

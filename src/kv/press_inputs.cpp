#include "kv/press_inputs.h"

#include "kv/token_runs.h"

namespace snapkv {

PressInputs press_inputs(const Tokenizer& tokenizer) {
  return {token_run_flags(tokenizer), reconstruction_prompt(tokenizer)};
}

}  // namespace snapkv

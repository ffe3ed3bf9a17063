#pragma once
// What presses need from the model's tokenizer, built once per model and shared by every
// sequence and evaluation that presses: the tokens' run and sentence flags (presses keeping
// whole token runs or sentences, PressConfig::reads_tokens) and the prompt that asks the model
// to repeat its context (kvzip, PressNeeds::reconstruct).
#include <cstdint>
#include <vector>

#include "kv/press.h"
#include "kv/reconstruction.h"
#include "snapkv/tokenizer.h"

namespace snapkv {

struct PressInputs {
  std::vector<uint8_t> run_flags;       // token_run_flags()
  ReconstructionPrompt reconstruction;  // reconstruction_prompt()
};
PressInputs press_inputs(const Tokenizer& tokenizer);

// Error(kInternal) when press reads the prompt's tokens or reconstructs it and inputs is null.
void require_press_inputs(const Press& press, const PressInputs* inputs);

}  // namespace snapkv

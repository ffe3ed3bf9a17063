#pragma once
// The flags shared by every subcommand that loads a model for computing, and the default model.
#include <CLI/CLI.hpp>

#include <string>

#include "snapkv/model.h"

namespace snapkv::cli {

// The model used when -m is not given: the one scripts/setup.sh downloads.
inline constexpr const char* kDefaultModel = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

struct ModelFlags {
  // q16, unlike the library's ModelOptions (f32): logits stay within the tolerance the reference
  // tests check against transformers, and decode is faster where the f32 kernel is compute-bound.
  std::string decode_activations = "q16";

  // The model options these flags describe (threads: 0 = all; n_ctx: --ctx, 0 = the model's), or
  // Error(kInvalidArgument).
  ModelOptions model_options(int threads = 0, int n_ctx = 0) const;
};

void add_model_flags(CLI::App& app, ModelFlags& o);

}  // namespace snapkv::cli

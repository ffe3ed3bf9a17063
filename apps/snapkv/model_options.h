#pragma once
// The flags shared by every subcommand that loads a model for computing (model options).
#include <CLI/CLI.hpp>

#include <string>

#include "model/model.h"

namespace snapkv::cli {

struct ModelFlags {
  std::string decode_activations = "f32";

  // The model options these flags describe, or Error(kInvalidArgument) with a readable message.
  ModelOptions model_options() const;
};

void add_model_flags(CLI::App& app, ModelFlags& o);

}  // namespace snapkv::cli

#pragma once
// The flags shared by every subcommand that loads a model for computing (model options).
#include <CLI/CLI.hpp>

#include <string>

#include "io/gguf.h"
#include "model/model.h"

namespace snapkv::cli {

struct ModelFlags {
  std::string decode_activations = "f32";

  // The model options these flags describe, or Error(kInvalidArgument) with a readable message.
  ModelOptions model_options() const;
  // How to open the model file for them: mapped where the model copies its matrices (q8 on a CPU
  // with the SIMD q8 kernels: the file's pages of each copied matrix then leave memory), else
  // read into huge pages.
  GgufFile::Memory file_memory() const;
};

void add_model_flags(CLI::App& app, ModelFlags& o);

}  // namespace snapkv::cli

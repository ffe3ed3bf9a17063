#pragma once
// The flags shared by every subcommand that loads a model for computing (model options).
#include <CLI/CLI.hpp>

#include <string>

#include "io/gguf.h"
#include "model/model.h"

namespace snapkv::cli {

struct ModelFlags {
  // q16, unlike the library's DecoderOptions (f32): within the f32 path's bound of transformers'
  // logits (3.2e-3 measured, f32 5.2e-4) and 1.1-1.5x faster decode on Zen 4 (README, Speed).
  std::string decode_activations = "q16";

  // The model options these flags describe, or Error(kInvalidArgument) with a readable message.
  DecoderOptions model_options() const;
  // How to open the model file for them: mapped where the model copies its matrices (q8 or q16 on
  // a CPU with the SIMD q8 kernels: the file's pages of each copied matrix then leave memory),
  // else read into huge pages.
  GgufFile::Memory file_memory() const;
};

void add_model_flags(CLI::App& app, ModelFlags& o);

}  // namespace snapkv::cli

#include "model_options.h"

#include "ops/rows8.h"
#include "util/error.h"

namespace snapkv::cli {

void add_model_flags(CLI::App& app, ModelFlags& o) {
  app.add_option("--decode-activations", o.decode_activations,
                 "what decode multiplies Q4_0/Q4_1/Q8_0 weights by: f32 (as transformers) | q16 (rounded to 16 bits "
                 "per block of 32, integer dot products; logits within 3.2e-3 of transformers') | q8 (rounded to 8 "
                 "bits as llama.cpp does); the integer forms are faster where the f32 kernel is compute-bound, as on "
                 "Zen 4; prefill of more than 8 tokens stays f32")
      ->capture_default_str();
}

DecoderOptions ModelFlags::model_options() const {
  DecoderOptions m;
  if (decode_activations == "f32") m.decode_activations = MatmulActivations::kF32;
  else if (decode_activations == "q8") m.decode_activations = MatmulActivations::kQ8;
  else if (decode_activations == "q16") m.decode_activations = MatmulActivations::kQ16;
  else fail(ErrorKind::kInvalidArgument, "--decode-activations must be f32, q16 or q8, got '{}'", decode_activations);
  return m;
}

GgufFile::Memory ModelFlags::file_memory() const {
  return rows8_wanted(model_options().decode_activations) ? GgufFile::Memory::kMapped : GgufFile::Memory::kHugePages;
}

}  // namespace snapkv::cli

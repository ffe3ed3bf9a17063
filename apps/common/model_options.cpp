#include "model_options.h"

#include "cli_error.h"

namespace snapkv::cli {

void add_model_flags(CLI::App& app, ModelFlags& o) {
  app.add_option("--decode-activations", o.decode_activations,
                 "what decode multiplies Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K weights by: f32 (as transformers) | q16 (rounded to 16 bits "
                 "per block of 32, integer dot products; logits within 3.2e-3 of transformers') | q8 (rounded to 8 "
                 "bits as llama.cpp does); the integer forms are faster where the f32 kernel is compute-bound, as on "
                 "Zen 4; prefill of more than 8 tokens rounds the same way for Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K weights (integer "
                 "GEMM)")
      ->capture_default_str();
}

ModelOptions ModelFlags::model_options(int threads, int n_ctx) const {
  ModelOptions m;
  m.threads = threads;
  m.n_ctx = n_ctx;
  if (!parse_matmul_activations(decode_activations, m.decode_activations)) {
    fail(ErrorKind::kInvalidArgument, "--decode-activations must be f32, q16 or q8, got '{}'", decode_activations);
  }
  return m;
}

}  // namespace snapkv::cli

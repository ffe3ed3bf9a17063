#pragma once
// Rotary position embedding, applied in place to rows laid out as [n_tok, n_head, head_dim].
#include <cstdint>
#include <vector>

namespace snapkv {

enum class RopeMode {
  kNormal,  // rotates adjacent pairs (x[2i], x[2i+1]); GGUF llama files (q/k permuted at export)
  kNeox,    // rotates halves (x[i], x[i + n_rot/2]); qwen2, gemma, phi and others
};

struct RopeParams {
  RopeMode mode = RopeMode::kNormal;
  int n_rot = 0;              // rotated dimensions (<= head_dim); the rest pass through
  double freq_base = 10000;   // theta_i = pos * freq_base^(-2i/n_rot) / freq_factor_i * freq_scale
  double freq_scale = 1;      // 1 / linear scaling factor
  std::vector<float> freq_factors;  // per pair divisor (Llama-3.1 rope_freqs), empty = all 1

  // Inverse frequencies per rotated pair, computed once.
  std::vector<double> inv_freq() const;
};

void rope(float* x, const int32_t* positions, int64_t n_tok, int n_head, int head_dim,
          const RopeParams& p, const std::vector<double>& inv_freq);

}  // namespace snapkv

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
  double freq_scale = 1;      // 1 / the scaling factor (linear or YaRN)
  std::vector<float> freq_factors;  // per pair divisor (Llama-3.1 rope_freqs), empty = all 1
  // YaRN (as llama.cpp and transformers apply it): pair i's frequency blends the scaled one and the
  // unscaled one by a ramp that is 1 (unscaled) for the fast pairs, below the pair where beta_fast
  // rotations fit the original context, and 0 (scaled) past the one where beta_slow fit; and the
  // cosines and sines are multiplied by mscale().
  bool yarn = false;
  int n_ctx_orig = 0;  // the original (training) context
  double beta_fast = 32, beta_slow = 1;
  double attn_factor = 1;  // GGUF rope.scaling.attn_factor, a further factor on mscale()

  // Inverse frequencies per rotated pair, computed once (a model keeps them).
  std::vector<double> inv_freq() const;
  // The factor on every cosine and sine: 1 + 0.1 ln(factor) with YaRN, times attn_factor.
  double mscale() const;
};

// The cosines and sines of n_tok tokens' angles theta_i = pos * inv_freq[i] (in double, rounded
// to float), [n_tok][n_rot / 2] each, from RopeParams::inv_freq. A forward call works them out
// once for the queries and keys of all its layers, rather than repeating the math library's cos
// and sin for each layer and each rope call.
struct RopeAngles {
  int64_t half = 0;  // n_rot / 2
  std::vector<float> cos, sin;
};
// Both are multiplied by mscale (RopeParams::mscale).
RopeAngles rope_angles(const std::vector<double>& inv_freq, const int32_t* positions, int64_t n_tok,
                       double mscale = 1);

// Rotates n_tok rows of x by the angles of tokens t0 .. t0 + n_tok - 1 of a.
void rope(float* x, const RopeAngles& a, int64_t t0, int64_t n_tok, int n_head, int head_dim, RopeMode mode);

}  // namespace snapkv

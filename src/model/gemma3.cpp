// Gemma 3: five sliding-window layers per global one, GeGLU with GELU's tanh form, embeddings
// scaled by sqrt(n_embd). Its other differences are tensors the shared decoder uses where present:
// per-head query/key RMSNorm and norms of the attention and feed-forward outputs (GGUF norm
// weights already hold Gemma's 1 + w). The scale of its attention scores is 1/sqrt(head_dim) as
// for the others (query_pre_attn_scalar = head_dim for every size but 27B).
#include <cmath>

#include "model/transformer.h"
#include "util/error.h"

namespace snapkv {

void describe_gemma3(const GgufFile& f, const ModelHparams& h, ArchSpec& spec) {
  spec.ffn = FfnActivation::kGeluTanh;
  spec.embed_scale = std::sqrt(static_cast<float>(h.n_embd));
  const int64_t window = static_cast<int64_t>(f.get_uint("gemma3.attention.sliding_window"));
  if (window <= 0 || window > h.n_ctx_train) {
    fail(ErrorKind::kBadFile, "{}: sliding window {} does not fit the context {}", f.path(), window, h.n_ctx_train);
  }
  // The window layers' rope: base 10K and no scaling (the file's rope is the global layers', as
  // in llama.cpp and transformers; GGUF does not store the local base).
  RopeParams local = spec.ropes[0];
  local.freq_base = 10000;
  local.freq_scale = 1;
  local.yarn = false;
  local.freq_factors.clear();
  local.attn_factor = 1;
  spec.ropes.push_back(local);
  for (size_t il = 0; il < spec.layers.size(); ++il) {
    if (il % 6 != 5) spec.layers[il] = LayerSpec{static_cast<int32_t>(window), 1};
  }
}

}  // namespace snapkv

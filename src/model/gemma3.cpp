// Gemma 3: sliding-window layers (five per global one, unless the file's
// attention.sliding_window_pattern says otherwise), GeGLU with GELU's tanh form, embeddings
// scaled by sqrt(n_embd). Its other differences are tensors the shared decoder uses where present:
// per-head query/key RMSNorm and norms of the attention and feed-forward outputs (GGUF norm
// weights already hold Gemma's 1 + w). The scale of its attention scores is 1/sqrt(head_dim) as
// for the others (query_pre_attn_scalar = head_dim for every size but 27B).
#include <cmath>
#include <vector>

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
  // The window layers' rope: no scaling, base rope.freq_base_swa, else 10K (the file's rope is the
  // global layers', as in llama.cpp and transformers).
  RopeParams local = spec.ropes[0];
  local.freq_base = f.get_float("gemma3.rope.freq_base_swa", 10000);
  local.freq_scale = 1;
  local.yarn = false;
  local.freq_factors.clear();
  local.attn_factor = 1;
  spec.ropes.push_back(local);
  // Which layers slide: as llama.cpp reads the pattern, a flag per layer, or a period n (the last
  // layer of every n is global), 6 where the file says nothing.
  std::vector<int64_t> sliding;
  const GgufValue* pattern = f.find("gemma3.attention.sliding_window_pattern");
  if (pattern && pattern->type == GgufValueType::kArray) {
    sliding = f.get_int_array("gemma3.attention.sliding_window_pattern");
  } else {
    const uint64_t n = f.get_uint("gemma3.attention.sliding_window_pattern", 6);
    for (size_t il = 0; il < spec.layers.size() && n > 0; ++il) sliding.push_back(il % n < n - 1);
  }
  if (sliding.size() != spec.layers.size()) {
    fail(ErrorKind::kBadFile, "{}: the sliding-window pattern does not describe {} layers", f.path(), spec.layers.size());
  }
  if (!(local.freq_base > 1)) fail(ErrorKind::kBadFile, "{}: invalid rope.freq_base_swa", f.path());
  for (size_t il = 0; il < spec.layers.size(); ++il) {
    if (sliding[il] != 0) spec.layers[il] = LayerSpec{static_cast<int32_t>(window), 1};
  }
}

}  // namespace snapkv

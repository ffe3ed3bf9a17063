#pragma once
// The decoder every architecture shares: a layer-major pre-norm transformer whose layers are
// described by data. What the GGUF holds is read once here: the standard hyper-parameters and
// rope keys, and each layer's optional tensors, which switch their step on where present (Q/K/V
// biases, per-head query/key RMSNorm, norms after the attention and feed-forward outputs, fused
// QKV and gate/up matrices). What a file does not say, the architecture declares in an ArchSpec:
// its rope layout, feed-forward activation, embedding scale, final logit soft-cap, and each
// layer's attention window and rope. An architecture is one function filling that in (llama.cpp,
// gemma3.cpp) and one line in registry.cpp.
#include <cstdint>
#include <memory>
#include <vector>

#include "io/gguf.h"
#include "model/model.h"
#include "ops/ffn.h"
#include "ops/rope.h"

namespace snapkv {

struct LayerSpec {
  int32_t window = 0;  // sliding attention window in positions (a query sees its last `window`), 0: all
  int rope = 0;        // index into ArchSpec::ropes
};

struct ArchSpec {
  // ropes[0] is the file's (rope.* keys, rope_freqs); an architecture may change its mode and add
  // others for some layers.
  std::vector<RopeParams> ropes;
  FfnActivation ffn = FfnActivation::kSilu;
  float embed_scale = 1;  // token embeddings are multiplied by it
  // Logits become cap * tanh(logit / cap) (Gemma-2 declares it, a Gemma-3 file may); 0: none. On entry the
  // file's final_logit_softcapping.
  float final_logit_softcap = 0;
  std::vector<LayerSpec> layers;  // [n_layer]
};

// Fills in spec (on entry: ropes = {the file's rope, mode NEOX}, every layer global with rope 0,
// the file's soft-cap) for the architecture of file f, whose standard hyper-parameters are h.
using DescribeArch = void (*)(const GgufFile& f, const ModelHparams& h, ArchSpec& spec);

std::unique_ptr<Decoder> make_transformer(const GgufFile& file, const DecoderOptions& options, DescribeArch describe,
                                          ThreadPool* pool);

}  // namespace snapkv

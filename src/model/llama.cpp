// The llama family (GGUF llama, mistral, qwen2, qwen3, phi3): everything they differ in (biases,
// query/key norms, fused matrices, rope scaling) is in the file, so all they declare is the rope
// layout.
#include "model/transformer.h"

namespace snapkv {

void describe_llama(const GgufFile& /*f*/, const ModelHparams& h, ArchSpec& spec) {
  // GGUF llama files hold Q/K rows permuted for rotation of adjacent pairs; the others rotate halves.
  if (h.arch == "llama" || h.arch == "mistral") spec.ropes[0].mode = RopeMode::kNormal;
}

}  // namespace snapkv

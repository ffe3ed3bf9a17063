#pragma once
// TEMPORARY: lets the subcommands not yet on the public API (bench, eval) load models the old way
// while they are being ported. Deleted when they are.
#include "io/gguf.h"
#include "model/model.h"
#include "engine/sequence.h"
#include "model_options.h"
#include "ops/rows8.h"
#include "snapkv/session.h"

namespace snapkv::cli {

inline DecoderOptions decoder_options_for(const ModelFlags& f) {
  return DecoderOptions{f.model_options().decode_activations};
}
inline GgufFile::Memory file_memory_for(const ModelFlags& f) {
  return rows8_wanted(f.model_options().decode_activations) ? GgufFile::Memory::kMapped : GgufFile::Memory::kHugePages;
}
inline SequenceOptions sequence_options(const SessionOptions& s) { return SequenceOptions{s.kv_type, s.press}; }

}  // namespace snapkv::cli

#pragma once
// The default model loaded once for all model tests (loading it per test would dominate).
#include <memory>

#include "io/gguf.h"
#include "model/model.h"
#include "support/paths.h"

namespace snapkv::test {

struct ReferenceModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Model> model;
};

inline const ReferenceModel& reference_model() {
  static const ReferenceModel m = [] {
    ReferenceModel r;
    r.file = GgufFile::open(default_model_path());
    r.model = load_model(*r.file);
    return r;
  }();
  return m;
}

}  // namespace snapkv::test

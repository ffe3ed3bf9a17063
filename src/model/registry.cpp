#include <array>
#include <string_view>

#include "model/model.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<Model> make_llama(const GgufFile& file, const ModelOptions& options);

namespace {
struct Entry {
  std::string_view arch;
  std::unique_ptr<Model> (*make)(const GgufFile&, const ModelOptions&);
};
// GGUF architecture names served by each implementation.
constexpr std::array kRegistry = {
    Entry{"llama", make_llama},
    Entry{"mistral", make_llama},
    Entry{"qwen2", make_llama},
};
}  // namespace

std::unique_ptr<Model> load_model(const GgufFile& file, const ModelOptions& options) {
  const std::string_view arch = file.get_string("general.architecture");
  for (const auto& e : kRegistry) {
    if (e.arch == arch) return e.make(file, options);
  }
  fail(ErrorKind::kUnsupported, "{}: architecture '{}' is not supported (supported: llama, mistral, qwen2)",
       file.path(), arch);
}

}  // namespace snapkv

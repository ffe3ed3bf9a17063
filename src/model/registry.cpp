#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/model.h"
#include "util/error.h"

namespace snapkv {

std::unique_ptr<Decoder> make_llama(const GgufFile& file, const DecoderOptions& options);

namespace {
struct Entry {
  std::string_view arch;
  std::unique_ptr<Decoder> (*make)(const GgufFile&, const DecoderOptions&);
};
// GGUF architecture names served by each implementation.
constexpr std::array kRegistry = {
    Entry{"llama", make_llama},
    Entry{"mistral", make_llama},
    Entry{"qwen2", make_llama},
    Entry{"qwen3", make_llama},
    Entry{"phi3", make_llama},
};
}  // namespace

std::vector<std::string> decoder_architectures() {
  std::vector<std::string> names;
  for (const auto& e : kRegistry) names.emplace_back(e.arch);
  return names;
}

std::unique_ptr<Decoder> load_decoder(const GgufFile& file, const DecoderOptions& options) {
  const std::string_view arch = file.get_string("general.architecture");
  for (const auto& e : kRegistry) {
    if (e.arch == arch) return e.make(file, options);
  }
  fail(ErrorKind::kUnsupported, "{}: architecture '{}' is not supported (supported: {})", file.path(), arch,
       fmt::join(decoder_architectures(), ", "));
}

}  // namespace snapkv

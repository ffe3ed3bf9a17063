#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/transformer.h"
#include "util/error.h"

namespace snapkv {

void describe_llama(const GgufFile& f, const ModelHparams& h, ArchSpec& spec);
void describe_gemma3(const GgufFile& f, const ModelHparams& h, ArchSpec& spec);

namespace {
struct Entry {
  std::string_view arch;
  DescribeArch describe;
};
// GGUF architecture names and what each declares (transformer.h).
constexpr std::array kRegistry = {
    Entry{"llama", describe_llama},
    Entry{"mistral", describe_llama},
    Entry{"qwen2", describe_llama},
    Entry{"qwen3", describe_llama},
    Entry{"phi3", describe_llama},
    Entry{"gemma3", describe_gemma3},
};
}  // namespace

std::vector<std::string> decoder_architectures() {
  std::vector<std::string> names;
  for (const auto& e : kRegistry) names.emplace_back(e.arch);
  return names;
}

std::unique_ptr<Decoder> load_decoder(const GgufFile& file, const DecoderOptions& options, ThreadPool* pool) {
  const std::string_view arch = file.get_string("general.architecture");
  for (const auto& e : kRegistry) {
    if (e.arch == arch) return make_transformer(file, options, e.describe, pool);
  }
  fail(ErrorKind::kUnsupported, "{}: architecture '{}' is not supported (supported: {})", file.path(), arch,
       fmt::join(decoder_architectures(), ", "));
}

}  // namespace snapkv

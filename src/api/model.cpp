#include <algorithm>
#include <cmath>
#include <thread>

#include "api/impl.h"
#include "io/gguf_fingerprint.h"
#include "kv/press_inputs.h"
#include "ops/rows8.h"
#include "util/error.h"

namespace snapkv {

std::string ModelOptions::validate() const {
  if (threads < 0 || threads > 512) return "threads must be between 0 (all) and 512";
  if (n_ctx < 0) return "the context size must be positive";
  return {};
}

// Each parse is the inverse of its name function, so the two cannot disagree.
bool parse_kv_type(const std::string& s, KvType& out) {
  for (const KvType t : {KvType::kF16, KvType::kBF16, KvType::kF32}) {
    if (s == kv_type_name(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

bool parse_matmul_activations(const std::string& s, MatmulActivations& out) {
  for (const MatmulActivations a : {MatmulActivations::kF32, MatmulActivations::kQ16, MatmulActivations::kQ8}) {
    if (s == matmul_activations_name(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

const char* matmul_activations_name(MatmulActivations a) {
  switch (a) {
    case MatmulActivations::kF32: return "f32";
    case MatmulActivations::kQ16: return "q16";
    case MatmulActivations::kQ8: return "q8";
  }
  return "?";
}

namespace {

SamplingParams recommended_sampling(const GgufFile& f, bool& from_file) {
  SamplingParams s{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  from_file = false;
  const auto number = [&](const char* key, auto& out) {
    if (!f.has(key)) return;
    from_file = true;
    const double v = f.get_float(key);
    if (!std::isfinite(v) || std::fabs(v) > 1e9) fail(ErrorKind::kBadFile, "{}: {} = {} is out of range", f.path(), key, v);
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
  };
  number("general.sampling.temp", s.temperature);
  number("general.sampling.top_k", s.top_k);
  number("general.sampling.top_p", s.top_p);
  number("general.sampling.min_p", s.min_p);
  number("general.sampling.penalty_repeat", s.repeat_penalty);
  number("general.sampling.penalty_last_n", s.repeat_last_n);
  if (s.top_k < 0) s.top_k = 0;  // -1: off
  if (!s.validate().empty()) fail(ErrorKind::kBadFile, "{}: general.sampling.*: {}", f.path(), s.validate());
  return s;
}

}  // namespace

Model Model::load(const std::string& path, const ModelOptions& options) {
  if (const std::string err = options.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  // Mapped where the decoder copies its matrices (the file's pages of each copied matrix then
  // leave memory), else read into huge pages: decode streams every weight once per token.
  const bool copies = rows8_wanted(options.decode_activations);
  impl->file = GgufFile::open(path, copies ? GgufFile::Memory::kMapped : GgufFile::Memory::kHugePages);
  impl->fingerprint = gguf_model_fingerprint(*impl->file);
  impl->tokenizer_fingerprint = gguf_tokenizer_fingerprint(*impl->file);
  const int n_threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl->pool = std::make_unique<ThreadPool>(n_threads);
  impl->options.threads = n_threads;
  impl->decoder = load_decoder(*impl->file, DecoderOptions{options.decode_activations, options.n_ctx}, impl->pool.get());
  impl->tokenizer = Tokenizer::from_gguf(*impl->file);
  impl->press_inputs = press_inputs(*impl->tokenizer);
  const std::string_view jinja = impl->file->get_string("tokenizer.chat_template", "");
  impl->chat_template = chat_template_from_jinja(jinja);
  // A Gemma base model's GGUF has no template; its turns are still Gemma's.
  if (jinja.empty() && impl->decoder->hparams().arch.starts_with("gemma")) {
    impl->chat_template.kind = ChatTemplateKind::kGemma;
  }

  const ModelHparams& hp = impl->decoder->hparams();
  ModelInfo& info = impl->info;
  info.path = path;
  info.arch = hp.arch;
  info.name = hp.name;
  info.n_layer = hp.n_layer;
  info.n_embd = hp.n_embd;
  info.n_ff = hp.n_ff;
  info.n_head = hp.n_head;
  info.n_head_kv = hp.n_head_kv;
  info.head_dim = hp.head_dim;
  info.layer_window = hp.layer_window;
  info.n_vocab = hp.n_vocab;
  info.n_ctx_train = hp.n_ctx_train;
  info.n_ctx = hp.n_ctx;
  info.longrope = hp.longrope;
  info.weight_bytes = impl->decoder->weight_bytes();
  info.recommended_sampling = recommended_sampling(*impl->file, info.sampling_from_file);
  return Model(std::move(impl));
}

const ModelInfo& Model::info() const { return impl_->info; }
const ModelOptions& Model::options() const { return impl_->options; }
const Tokenizer& Model::tokenizer() const { return *impl_->tokenizer; }
const ChatTemplate& Model::chat_template() const { return impl_->chat_template; }

ChatTemplate Model::pick_chat_template(const std::string& name) const {
  if (name.empty()) return impl_->chat_template;
  return ChatTemplate{chat_template_from_name(name), std::nullopt};
}

std::vector<std::string> supported_architectures() { return decoder_architectures(); }

}  // namespace snapkv

// Llama-family decoder (GGUF archs llama, mistral, qwen2): RMSNorm, RoPE, grouped-query
// attention with optional QKV bias, SwiGLU feed-forward, optionally tied output embeddings.
//
// Prefill is layer-major: all tokens pass through layer l before layer l+1 starts, so a layer's
// keys and values are complete when it finishes (what SnapKV needs to compress it at once).
// Within a layer, tokens go in chunks, so only the residual stream [n_tok, n_embd] grows with the
// prompt while the [chunk, n_ff] feed-forward activations stay bounded.
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr int64_t kChunk = 256;  // tokens per chunk inside a layer

// Activations of one chunk, allocated once per forward call and reused by every layer and chunk.
struct Scratch {
  Scratch(const ModelHparams& h, int64_t n)
      : hn(n * h.n_embd), q(n * h.n_head * h.head_dim), k(n * h.n_head_kv * h.head_dim),
        v(n * h.n_head_kv * h.head_dim), o(n * h.n_head * h.head_dim), gate(n * h.n_ff), up(n * h.n_ff) {}
  std::vector<float> hn, q, k, v, o;  // [n, n_embd], [n, n_head*d], [n, n_kv*d] x2, [n, n_head*d]
  std::vector<float> gate, up;        // [n, n_ff]
};

struct Layer {
  std::vector<float> attn_norm, ffn_norm;   // [n_embd]
  WeightMatrix wq, wk, wv, wo;              // [n_head*d, n_embd], [n_kv*d, n_embd] x2, [n_embd, n_head*d]
  std::vector<float> bq, bk, bv;            // optional biases (qwen2)
  WeightMatrix w_gate, w_up, w_down;        // [n_ff, n_embd] x2, [n_embd, n_ff]
};

class Llama final : public Model {
 public:
  explicit Llama(const GgufFile& f);
  size_t weight_bytes() const override { return weight_bytes_; }
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> positions, KvStore& kv,
               LogitsMode mode, std::vector<float>& logits, ThreadPool& pool,
               LayerObserver* observer) const override;

 private:
  WeightMatrix load_matrix(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out);
  std::vector<float> load_vector(const GgufFile& f, const std::string& name, int64_t n, bool required);
  void layer_chunk(const Layer& L, int il, float* x, const int32_t* pos, int64_t n, KvStore& kv,
                   Scratch& s, ThreadPool& pool, LayerObserver* observer) const;

  WeightMatrix tok_embd_, output_;
  std::vector<float> output_norm_;
  std::vector<Layer> layers_;
  std::vector<double> inv_freq_;
  size_t weight_bytes_ = 0;
};

WeightMatrix Llama::load_matrix(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out) {
  const GgufTensor& t = f.tensor(name);
  if (t.ne[0] != n_in || t.n_rows() != n_out) {
    fail(ErrorKind::kBadFile, "{}: tensor '{}' has shape [{}, {}], expected [{}, {}]", f.path(), name,
         t.ne[0], t.n_rows(), n_in, n_out);
  }
  const GgmlTypeInfo& info = ggml_type_info(t.type);
  if (!info.supported) {
    fail(ErrorKind::kUnsupported, "{}: tensor '{}' has type {}, which this engine does not support yet",
         f.path(), name, info.name);
  }
  weight_bytes_ += t.n_bytes;
  return WeightMatrix{t.type, t.data, n_in, n_out, ggml_row_bytes(info, n_in)};
}

std::vector<float> Llama::load_vector(const GgufFile& f, const std::string& name, int64_t n, bool required) {
  if (!required && !f.find_tensor(name)) return {};
  const WeightMatrix w = load_matrix(f, name, n, 1);
  std::vector<float> out(n);
  get_row(w, 0, out.data());
  return out;
}

Llama::Llama(const GgufFile& f) {
  ModelHparams& h = hp_;
  h.arch = std::string(f.get_string("general.architecture"));
  h.name = std::string(f.get_string("general.name", h.arch));
  const std::string a = h.arch + ".";
  h.n_layer = static_cast<int>(f.get_uint(a + "block_count"));
  h.n_embd = static_cast<int>(f.get_uint(a + "embedding_length"));
  h.n_ff = static_cast<int>(f.get_uint(a + "feed_forward_length"));
  h.n_head = static_cast<int>(f.get_uint(a + "attention.head_count"));
  h.n_head_kv = static_cast<int>(f.get_uint(a + "attention.head_count_kv", h.n_head));
  h.n_ctx_train = static_cast<int>(f.get_uint(a + "context_length"));
  h.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon"));
  if (h.n_layer <= 0 || h.n_layer > 1024 || h.n_embd <= 0 || h.n_embd > 65536 || h.n_head <= 0 ||
      h.n_head_kv <= 0 || h.n_head % h.n_head_kv != 0 || h.n_ff <= 0 || h.n_ff > 1 << 20) {
    fail(ErrorKind::kBadFile, "{}: inconsistent hyper-parameters (layers {}, embd {}, heads {}/{}, ff {})",
         f.path(), h.n_layer, h.n_embd, h.n_head, h.n_head_kv, h.n_ff);
  }
  h.head_dim = static_cast<int>(f.get_uint(a + "attention.key_length", h.n_embd / h.n_head));
  if (h.head_dim <= 0 || h.head_dim > 1024 || h.head_dim % 2 != 0) {
    fail(ErrorKind::kBadFile, "{}: head dimension {} is not supported", f.path(), h.head_dim);
  }

  const GgufTensor& embd = f.tensor("token_embd.weight");
  h.n_vocab = static_cast<int>(embd.n_rows());
  tok_embd_ = load_matrix(f, "token_embd.weight", h.n_embd, h.n_vocab);
  output_norm_ = load_vector(f, "output_norm.weight", h.n_embd, true);
  output_ = f.find_tensor("output.weight") ? load_matrix(f, "output.weight", h.n_embd, h.n_vocab) : tok_embd_;

  RopeParams& r = h.rope;
  r.mode = h.arch == "qwen2" ? RopeMode::kNeox : RopeMode::kNormal;
  r.n_rot = static_cast<int>(f.get_uint(a + "rope.dimension_count", h.head_dim));
  if (r.n_rot <= 0 || r.n_rot > h.head_dim || r.n_rot % 2 != 0) {
    fail(ErrorKind::kBadFile, "{}: rope dimension {} does not fit head dimension {}", f.path(), r.n_rot, h.head_dim);
  }
  r.freq_base = f.get_float(a + "rope.freq_base", 10000.0);
  const std::string_view scaling = f.get_string(a + "rope.scaling.type", "none");
  if (scaling == "linear") {
    r.freq_scale = 1.0 / f.get_float(a + "rope.scaling.factor", 1.0);
  } else if (scaling != "none") {
    fail(ErrorKind::kUnsupported, "{}: rope scaling '{}' is not supported", f.path(), scaling);
  }
  r.freq_factors = load_vector(f, "rope_freqs.weight", r.n_rot / 2, false);
  if (r.freq_base <= 0 || r.freq_scale <= 0) fail(ErrorKind::kBadFile, "{}: invalid rope parameters", f.path());
  inv_freq_ = r.inv_freq();

  const int64_t d = h.head_dim, e = h.n_embd;
  layers_.resize(h.n_layer);
  for (int il = 0; il < h.n_layer; ++il) {
    Layer& L = layers_[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    L.attn_norm = load_vector(f, p + "attn_norm.weight", e, true);
    L.ffn_norm = load_vector(f, p + "ffn_norm.weight", e, true);
    L.wq = load_matrix(f, p + "attn_q.weight", e, h.n_head * d);
    L.wk = load_matrix(f, p + "attn_k.weight", e, h.n_head_kv * d);
    L.wv = load_matrix(f, p + "attn_v.weight", e, h.n_head_kv * d);
    L.wo = load_matrix(f, p + "attn_output.weight", h.n_head * d, e);
    L.bq = load_vector(f, p + "attn_q.bias", h.n_head * d, false);
    L.bk = load_vector(f, p + "attn_k.bias", h.n_head_kv * d, false);
    L.bv = load_vector(f, p + "attn_v.bias", h.n_head_kv * d, false);
    L.w_gate = load_matrix(f, p + "ffn_gate.weight", e, h.n_ff);
    L.w_up = load_matrix(f, p + "ffn_up.weight", e, h.n_ff);
    L.w_down = load_matrix(f, p + "ffn_down.weight", h.n_ff, e);
  }
  // A tied output matrix was counted twice.
  if (output_.data == tok_embd_.data) weight_bytes_ -= f.tensor("token_embd.weight").n_bytes;
}

// One chunk of tokens through one layer; x [n, n_embd] is updated in place.
void Llama::layer_chunk(const Layer& L, int il, float* x, const int32_t* pos, int64_t n,
                        KvStore& kv, Scratch& s, ThreadPool& pool, LayerObserver* observer) const {
  const ModelHparams& h = hp_;
  const int64_t e = h.n_embd;
  const int64_t nq = h.n_head * h.head_dim, nkv = h.n_head_kv * h.head_dim;
  float* hn = s.hn.data();

  rms_norm(x, L.attn_norm.data(), hn, n, e, h.rms_eps);
  matmul(L.wq, hn, n, s.q.data(), pool);
  matmul(L.wk, hn, n, s.k.data(), pool);
  matmul(L.wv, hn, n, s.v.data(), pool);
  if (!L.bq.empty()) add_bias(s.q.data(), L.bq.data(), n, nq);
  if (!L.bk.empty()) add_bias(s.k.data(), L.bk.data(), n, nkv);
  if (!L.bv.empty()) add_bias(s.v.data(), L.bv.data(), n, nkv);
  rope(s.q.data(), pos, n, h.n_head, h.head_dim, h.rope, inv_freq_);
  rope(s.k.data(), pos, n, h.n_head_kv, h.head_dim, h.rope, inv_freq_);
  kv.append(il, n, s.k.data(), s.v.data(), pos);
  if (observer) observer->queries(il, n, s.q.data(), pos, kv);
  attention(s.q.data(), pos, n, h.n_head, h.head_dim, kv.layer(il), s.o.data(), pool);
  matmul(L.wo, s.o.data(), n, hn, pool);
  add_inplace(x, hn, n * e);

  rms_norm(x, L.ffn_norm.data(), hn, n, e, h.rms_eps);
  matmul(L.w_gate, hn, n, s.gate.data(), pool);
  matmul(L.w_up, hn, n, s.up.data(), pool);
  silu_mul_inplace(s.gate.data(), s.up.data(), n * h.n_ff);
  matmul(L.w_down, s.gate.data(), n, hn, pool);
  add_inplace(x, hn, n * e);
}

void Llama::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions, KvStore& kv,
                    LogitsMode mode, std::vector<float>& logits, ThreadPool& pool,
                    LayerObserver* observer) const {
  const ModelHparams& h = hp_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t e = h.n_embd;
  if (n == 0) return;
  std::vector<float> x(n * e);  // residual stream [n, n_embd]
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= h.n_vocab) {
      fail(ErrorKind::kInvalidArgument, "token id {} is outside the vocabulary of {}", tokens[t], h.n_vocab);
    }
    get_row(tok_embd_, tokens[t], x.data() + t * e);
  }
  Scratch scratch(h, std::min(kChunk, n));
  for (int il = 0; il < h.n_layer; ++il) {
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t c = std::min(kChunk, n - c0);
      layer_chunk(layers_[il], il, x.data() + c0 * e, positions.data() + c0, c, kv, scratch, pool, observer);
    }
    if (observer) observer->layer_done(il);
  }
  if (mode == LogitsMode::kNone) {
    logits.clear();
    return;
  }
  const int64_t first = mode == LogitsMode::kAll ? 0 : n - 1;
  const int64_t rows = n - first;
  std::vector<float> hn(rows * e);
  rms_norm(x.data() + first * e, output_norm_.data(), hn.data(), rows, e, h.rms_eps);
  logits.resize(rows * h.n_vocab);
  matmul(output_, hn.data(), rows, logits.data(), pool);
}

}  // namespace

std::unique_ptr<Model> make_llama(const GgufFile& file) { return std::make_unique<Llama>(file); }

}  // namespace snapkv

// The shared decoder (transformer.h): RMSNorm, RoPE, grouped-query attention (over the whole
// context or a sliding window) with optional QKV bias (qwen2) and per-head query/key RMSNorm
// (qwen3, gemma3), optional norms after the attention and feed-forward outputs (gemma3), a gated
// feed-forward (SwiGLU or GeGLU), optionally tied output embeddings. Fused QKV and gate/up
// matrices (phi3) are viewed as the separate matrices they hold.
//
// Prefill is layer-major: all tokens pass through layer l before layer l+1 starts, so a layer's
// keys and values are complete when it finishes (what SnapKV needs to compress it at once).
// Within a layer, tokens go in chunks, so only the residual stream [n_tok, n_embd] grows with the
// prompt while the [chunk, n_ff] feed-forward activations stay bounded.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "model/transformer.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/ffn.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/row_split.h"
#include "ops/rows8.h"
#include "util/aligned_vector.h"
#include "util/error.h"

namespace snapkv {
namespace {

// Activations of one chunk, allocated once per forward call and reused by every layer and chunk.
// Cache-line aligned: a decode matvec loads its input in whole vectors, and a load split across
// two lines costs it about a cycle per 32 weights.
struct Scratch {
  Scratch(const ModelHparams& h, int64_t n)
      : hn(n * h.n_embd), q(n * h.n_head * h.head_dim), k(n * h.n_head_kv * h.head_dim),
        v(n * h.n_head_kv * h.head_dim), o(n * h.n_head * h.head_dim), lse(n * h.n_head), gate(n * h.n_ff),
        up(n * h.n_ff) {}
  AlignedVector<float> hn, q, k, v, o;  // [n, n_embd], [n, n_head*d], [n, n_kv*d] x2, [n, n_head*d]
  AlignedVector<float> lse;             // [n, n_head]
  AlignedVector<float> gate, up;        // [n, n_ff]
};

struct Layer {
  LayerSpec spec;
  std::vector<float> attn_norm, ffn_norm;   // [n_embd]
  std::vector<float> post_attn_norm, post_ffn_norm;  // optional [n_embd], on the outputs (gemma3)
  WeightMatrix wq, wk, wv, wo;              // [n_head*d, n_embd], [n_kv*d, n_embd] x2, [n_embd, n_head*d]
  std::vector<float> bq, bk, bv;            // optional biases (qwen2)
  std::vector<float> q_norm, k_norm;        // optional per-head RMSNorm weights [head_dim] (qwen3)
  WeightMatrix w_gate, w_up, w_down;        // [n_ff, n_embd] x2, [n_embd, n_ff]
};

class Transformer final : public Decoder {
 public:
  Transformer(const GgufFile& f, const DecoderOptions& options, DescribeArch describe, ThreadPool* pool);
  size_t weight_bytes() const override { return weight_bytes_; }
  std::unique_ptr<ForwardPass> begin_forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                             KvStore& kv, LogitsMode mode, std::vector<float>& logits,
                                             ThreadPool& pool, LayerObserver* observer) const override;
  void decode_batch(std::span<const DecodeRow> rows, std::vector<float>& logits, ThreadPool& pool) const override;
  std::vector<float> out_proj(int il) const override {
    const WeightMatrix& wo = layers_.at(static_cast<size_t>(il)).wo;
    std::vector<float> w(static_cast<size_t>(wo.n_out * wo.n_in));
    for (int64_t r = 0; r < wo.n_out; ++r) get_row(wo, r, w.data() + r * wo.n_in);
    return w;
  }

  // The pieces of a layer and of the output, shared by forward passes and batched decoding.
  // Embeddings of tokens into x [n, n_embd].
  void embed(std::span<const int32_t> tokens, float* x) const;
  // RoPE's angles of the tokens at these positions, per rope of the spec, for project_qkv.
  std::vector<RopeAngles> angles(std::span<const int32_t> positions) const {
    std::vector<RopeAngles> a;
    for (size_t i = 0; i < ropes_.size(); ++i) {
      a.push_back(rope_angles(inv_freq_[i], positions.data(), static_cast<int64_t>(positions.size()), ropes_[i].mscale()));
    }
    return a;
  }
  // Norm, Q/K/V projections and RoPE of n rows of x, the tokens first .. first + n - 1 of rot,
  // into s.q, s.k, s.v.
  void project_qkv(int il, const float* x, const std::vector<RopeAngles>& rot, int64_t first, int64_t n, Scratch& s,
                   ThreadPool& pool) const;
  // Output projection of s.o and the feed-forward block, both added to x.
  void finish_layer(int il, float* x, int64_t n, Scratch& s, ThreadPool& pool) const;
  // One chunk of tokens of one sequence through layer il: n tokens at positions pos, the tokens
  // first .. first + n - 1 of rot; x [n, n_embd] is updated in place.
  void layer_chunk(int il, float* x, const int32_t* pos, const std::vector<RopeAngles>& rot, int64_t first, int64_t n,
                   KvStore& kv, Scratch& s, ThreadPool& pool, LayerObserver* observer) const;
  // Final norm and output matrix on n rows of x.
  void output_logits(const float* x, int64_t n, std::vector<float>& logits, ThreadPool& pool) const;

 private:
  WeightMatrix load_matrix(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out);
  // Rows first .. first + n - 1 of a matrix, as a matrix of their own (a fused matrix's part).
  static WeightMatrix rows_of(const WeightMatrix& w, int64_t first, int64_t n);
  std::vector<float> load_vector(const GgufFile& f, const std::string& name, int64_t n, bool required);

  WeightMatrix tok_embd_, output_;
  std::vector<float> output_norm_;
  std::vector<Layer> layers_;
  AlignedVector<uint8_t> rows8_;  // the interleaved copies that WeightMatrix::rows8 point to
  std::vector<RopeParams> ropes_;
  std::vector<std::vector<double>> inv_freq_;  // per rope
  FfnActivation ffn_ = FfnActivation::kSilu;
  float embed_scale_ = 1;
  float final_softcap_ = 0;
  size_t weight_bytes_ = 0;
};

// A forward call over one sequence, one (layer, chunk) piece per step: layer-major, so each layer
// holds every token's keys and values when layer_done is called.
class TransformerPass final : public ForwardPass {
 public:
  TransformerPass(const Transformer& m, std::span<const int32_t> tokens, std::span<const int32_t> positions, KvStore& kv,
            LogitsMode mode, std::vector<float>& logits, ThreadPool& pool, LayerObserver* observer)
      : m_(m), positions_(positions), kv_(kv), mode_(mode), logits_(logits), pool_(pool), observer_(observer),
        n_(static_cast<int64_t>(tokens.size())), x_(n_ * m.hparams().n_embd),
        rot_(m.angles(positions)), scratch_(m.hparams(), std::min(kPrefillChunk, n_)) {
    m.embed(tokens, x_.data());
  }

  bool step() override {
    const int64_t e = m_.hparams().n_embd;
    if (il_ < m_.hparams().n_layer && n_ > 0) {
      const int64_t c = std::min(kPrefillChunk, n_ - c0_);
      m_.layer_chunk(il_, x_.data() + c0_ * e, positions_.data() + c0_, rot_, c0_, c, kv_, scratch_, pool_, observer_);
      c0_ += c;
      if (c0_ < n_) return false;
      if (observer_) observer_->layer_done(il_);
      c0_ = 0;
      if (++il_ < m_.hparams().n_layer) return false;
    }
    if (mode_ == LogitsMode::kNone || n_ == 0) {
      logits_.clear();
    } else {
      const int64_t first = mode_ == LogitsMode::kAll ? 0 : n_ - 1;
      m_.output_logits(x_.data() + first * e, n_ - first, logits_, pool_);
    }
    il_ = m_.hparams().n_layer;
    return true;
  }

 private:
  const Transformer& m_;
  std::span<const int32_t> positions_;
  KvStore& kv_;
  LogitsMode mode_;
  std::vector<float>& logits_;
  ThreadPool& pool_;
  LayerObserver* observer_;
  int64_t n_;
  std::vector<float> x_;  // residual stream [n, n_embd]
  std::vector<RopeAngles> rot_;  // of every token, per rope
  Scratch scratch_;
  int il_ = 0;
  int64_t c0_ = 0;
};

WeightMatrix Transformer::load_matrix(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out) {
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

WeightMatrix Transformer::rows_of(const WeightMatrix& w, int64_t first, int64_t n) {
  WeightMatrix part = w;
  part.data = w.data + static_cast<size_t>(first) * w.row_bytes;
  part.n_out = n;
  return part;
}

std::vector<float> Transformer::load_vector(const GgufFile& f, const std::string& name, int64_t n, bool required) {
  if (!required && !f.find_tensor(name)) return {};
  const WeightMatrix w = load_matrix(f, name, n, 1);
  std::vector<float> out(n);
  get_row(w, 0, out.data());
  return out;
}

Transformer::Transformer(const GgufFile& f, const DecoderOptions& options, DescribeArch describe, ThreadPool* pool) {
  opts_ = options;
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
  h.n_ctx = options.n_ctx > 0 ? options.n_ctx : h.n_ctx_train;
  if (h.n_ctx > h.n_ctx_train) {
    fail(ErrorKind::kInvalidArgument, "a context of {} tokens exceeds the model's training context of {}", h.n_ctx,
         h.n_ctx_train);
  }
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
  r.mode = RopeMode::kNeox;
  r.n_rot = static_cast<int>(f.get_uint(a + "rope.dimension_count", h.head_dim));
  if (r.n_rot <= 0 || r.n_rot > h.head_dim || r.n_rot % 2 != 0) {
    fail(ErrorKind::kBadFile, "{}: rope dimension {} does not fit head dimension {}", f.path(), r.n_rot, h.head_dim);
  }
  r.freq_base = f.get_float(a + "rope.freq_base", 10000.0);
  const std::string_view scaling = f.get_string(a + "rope.scaling.type", "none");
  if (scaling == "linear" || scaling == "yarn") {
    r.freq_scale = 1.0 / f.get_float(a + "rope.scaling.factor", 1.0);
    r.yarn = scaling == "yarn";
  } else if (scaling != "none") {
    fail(ErrorKind::kUnsupported, "{}: rope scaling '{}' is not supported", f.path(), scaling);
  }
  r.n_ctx_orig = static_cast<int>(f.get_uint(a + "rope.scaling.original_context_length", h.n_ctx_train));
  r.attn_factor = f.get_float(a + "rope.scaling.attn_factor", 1.0);
  r.freq_factors = load_vector(f, "rope_freqs.weight", r.n_rot / 2, false);
  // LongRoPE (Phi-3 128K and its successors): two sets of per-pair divisors, the long one for a
  // context past the original, chosen once for the context the model is loaded for, as llama.cpp
  // chooses per context; the cosines and sines carry attn_factor either way.
  const bool long_factors = f.find_tensor("rope_factors_long.weight") != nullptr;
  if (long_factors != (f.find_tensor("rope_factors_short.weight") != nullptr) ||
      (long_factors && !r.freq_factors.empty())) {
    fail(ErrorKind::kBadFile, "{}: rope factors must be rope_freqs alone or rope_factors_long with rope_factors_short",
         f.path());
  }
  if (long_factors) {
    h.longrope = h.n_ctx > r.n_ctx_orig ? "long" : "short";
    r.freq_factors = load_vector(f, "rope_factors_" + h.longrope + ".weight", r.n_rot / 2, true);
  }
  if (!(r.freq_base > 1) || !(r.freq_scale > 0) || (r.yarn && r.n_ctx_orig <= 0) || !(r.attn_factor > 0)) {
    fail(ErrorKind::kBadFile, "{}: invalid rope parameters", f.path());
  }

  if (f.get_float(a + "attn_logit_softcapping", 0) != 0) {
    fail(ErrorKind::kUnsupported, "{}: soft-capped attention scores (Gemma-2's attn_logit_softcapping) are not supported",
         f.path());
  }
  ArchSpec spec;
  spec.ropes = {r};
  spec.final_logit_softcap = static_cast<float>(f.get_float(a + "final_logit_softcapping", 0));
  spec.layers.resize(h.n_layer);
  describe(f, h, spec);
  ropes_ = spec.ropes;
  for (const RopeParams& rp : ropes_) inv_freq_.push_back(rp.inv_freq());
  r = ropes_[0];
  ffn_ = spec.ffn;
  embed_scale_ = spec.embed_scale;
  final_softcap_ = spec.final_logit_softcap;
  if (!(final_softcap_ >= 0)) fail(ErrorKind::kBadFile, "{}: final logit soft-cap {} is negative", f.path(), final_softcap_);

  const int64_t d = h.head_dim, e = h.n_embd;
  layers_.resize(h.n_layer);
  for (int il = 0; il < h.n_layer; ++il) {
    Layer& L = layers_[il];
    L.spec = spec.layers[il];
    h.layer_window.push_back(L.spec.window);
    const std::string p = "blk." + std::to_string(il) + ".";
    L.attn_norm = load_vector(f, p + "attn_norm.weight", e, true);
    L.ffn_norm = load_vector(f, p + "ffn_norm.weight", e, true);
    L.post_attn_norm = load_vector(f, p + "post_attention_norm.weight", e, false);
    L.post_ffn_norm = load_vector(f, p + "post_ffw_norm.weight", e, false);
    const int64_t nq = h.n_head * d, nkv = h.n_head_kv * d;
    if (f.find_tensor(p + "attn_qkv.weight")) {
      const WeightMatrix qkv = load_matrix(f, p + "attn_qkv.weight", e, nq + 2 * nkv);
      L.wq = rows_of(qkv, 0, nq);
      L.wk = rows_of(qkv, nq, nkv);
      L.wv = rows_of(qkv, nq + nkv, nkv);
    } else {
      L.wq = load_matrix(f, p + "attn_q.weight", e, nq);
      L.wk = load_matrix(f, p + "attn_k.weight", e, nkv);
      L.wv = load_matrix(f, p + "attn_v.weight", e, nkv);
    }
    L.wo = load_matrix(f, p + "attn_output.weight", h.n_head * d, e);
    L.bq = load_vector(f, p + "attn_q.bias", h.n_head * d, false);
    L.bk = load_vector(f, p + "attn_k.bias", h.n_head_kv * d, false);
    L.bv = load_vector(f, p + "attn_v.bias", h.n_head_kv * d, false);
    L.q_norm = load_vector(f, p + "attn_q_norm.weight", d, false);
    L.k_norm = load_vector(f, p + "attn_k_norm.weight", d, false);
    if (L.q_norm.empty() != L.k_norm.empty()) {
      fail(ErrorKind::kBadFile, "{}: layer {} has a norm for queries or keys but not both", f.path(), il);
    }
    if (f.find_tensor(p + "ffn_gate.weight")) {
      L.w_gate = load_matrix(f, p + "ffn_gate.weight", e, h.n_ff);
      L.w_up = load_matrix(f, p + "ffn_up.weight", e, h.n_ff);
    } else {  // gate and up in one matrix, gate first
      const WeightMatrix gate_up = load_matrix(f, p + "ffn_up.weight", e, 2 * int64_t{h.n_ff});
      L.w_gate = rows_of(gate_up, 0, h.n_ff);
      L.w_up = rows_of(gate_up, h.n_ff, h.n_ff);
    }
    L.w_down = load_matrix(f, p + "ffn_down.weight", h.n_ff, e);
  }
  // With 8-bit activations, decode reads copies of the matrices interleaved by 8 rows (rows8.h),
  // on which the kernels run faster. Prefill and the embeddings read the copies too, so the
  // file's pages of a copied matrix leave memory, one matrix after another, when the file is
  // mapped (GgufFile::release; another model built from the same file reads them again from the
  // file).
  // The copies share one buffer, in the order decode reads them: a buffer of 2 MiB or more is in
  // huge pages (aligned_vector.h), where a buffer per matrix (most under 2 MiB) would be in 4 KiB
  // pages, each a TLB miss and the end of the hardware prefetcher's stream.
  if (rows8_wanted(opts_.decode_activations)) {
    std::vector<WeightMatrix*> copied;
    for (Layer& L : layers_) {
      for (WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) copied.push_back(w);
    }
    copied.push_back(&output_);
    std::erase_if(copied, [](const WeightMatrix* w) { return !rows8_supported(*w); });
    // Each copy from a cache line, as a separate buffer would be.
    const auto bytes = [](const WeightMatrix* w) { return (static_cast<size_t>(w->n_out) * w->row_bytes + 63) / 64 * 64; };
    size_t total = 0;
    for (const WeightMatrix* w : copied) total += bytes(w);
    rows8_.resize(total);
    size_t at = 0;
    for (WeightMatrix* w : copied) {
      // In slices of groups of 8 rows (a run of the file's rows, and of the copy), the file's
      // pages released as soon as they are copied: the peak holds a slice of them beside the
      // copies, not the largest matrix (a tied embedding of 128K rows is over 200 MiB). Each
      // release runs from the matrix's start, so that pages straddling two slices go too.
      const size_t group_bytes = 8 * w->row_bytes;
      const int64_t n_groups = w->n_out / 8;
      const int64_t per_slice = std::max<int64_t>(1, static_cast<int64_t>((size_t{16} << 20) / group_bytes));
      for (int64_t g0 = 0; g0 < n_groups; g0 += per_slice) {
        const int64_t g1 = std::min(n_groups, g0 + per_slice);
        uint8_t* copy = rows8_.data() + at + static_cast<size_t>(g0) * group_bytes;
        const auto interleave = [&](int64_t i0, int64_t i1) {  // groups g0 + [i0, i1)
          interleave_rows8(rows_of(*w, 8 * (g0 + i0), 8 * (i1 - i0)), copy + static_cast<size_t>(i0) * group_bytes);
        };
        if (pool) pool->parallel_for(g1 - g0, interleave);
        else interleave(0, g1 - g0);
        f.release(w->data, static_cast<size_t>(g1) * group_bytes);
      }
      w->rows8 = rows8_.data() + at;
      at += bytes(w);
    }
    if (tok_embd_.data == output_.data) tok_embd_.rows8 = output_.rows8;  // tied: embeddings read the copy
  }
}

void Transformer::embed(std::span<const int32_t> tokens, float* x) const {
  const ModelHparams& h = hp_;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= h.n_vocab) {
      fail(ErrorKind::kInvalidArgument, "token id {} is outside the vocabulary of {}", tokens[t], h.n_vocab);
    }
    float* row = x + t * h.n_embd;
    get_row(tok_embd_, tokens[t], row);
    if (embed_scale_ != 1) {
      for (int i = 0; i < h.n_embd; ++i) row[i] *= embed_scale_;
    }
  }
}

void Transformer::project_qkv(int il, const float* x, const std::vector<RopeAngles>& rot, int64_t first, int64_t n, Scratch& s,
                        ThreadPool& pool) const {
  const ModelHparams& h = hp_;
  const Layer& L = layers_[il];
  const int64_t nq = h.n_head * h.head_dim, nkv = h.n_head_kv * h.head_dim;
  float* hn = s.hn.data();
  over_tokens(pool, n, [&](int64_t t0, int64_t t1) {
    rms_norm(x + t0 * h.n_embd, L.attn_norm.data(), hn + t0 * h.n_embd, t1 - t0, h.n_embd, h.rms_eps);
  });
  const MatmulJob qkv[] = {{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}};
  matmul_many(qkv, hn, n, pool, opts_.decode_activations);
  if (!L.bq.empty()) add_bias(s.q.data(), L.bq.data(), n, nq);
  if (!L.bk.empty()) add_bias(s.k.data(), L.bk.data(), n, nkv);
  if (!L.bv.empty()) add_bias(s.v.data(), L.bv.data(), n, nkv);
  over_tokens(pool, n, [&](int64_t t0, int64_t t1) {
    if (!L.q_norm.empty()) {
      float* q = s.q.data() + t0 * nq;
      float* k = s.k.data() + t0 * nkv;
      rms_norm(q, L.q_norm.data(), q, (t1 - t0) * h.n_head, h.head_dim, h.rms_eps);
      rms_norm(k, L.k_norm.data(), k, (t1 - t0) * h.n_head_kv, h.head_dim, h.rms_eps);
    }
    const RopeAngles& a = rot[L.spec.rope];
    const RopeMode mode = ropes_[L.spec.rope].mode;
    rope(s.q.data() + t0 * nq, a, first + t0, t1 - t0, h.n_head, h.head_dim, mode);
    rope(s.k.data() + t0 * nkv, a, first + t0, t1 - t0, h.n_head_kv, h.head_dim, mode);
  });
}

void Transformer::finish_layer(int il, float* x, int64_t n, Scratch& s, ThreadPool& pool) const {
  const ModelHparams& h = hp_;
  const Layer& L = layers_[il];
  const int64_t e = h.n_embd;
  float* hn = s.hn.data();
  // x += hn, normed first where the layer norms its outputs (gemma3).
  const auto add_output = [&](const std::vector<float>& post_norm) {
    if (!post_norm.empty()) {
      over_tokens(pool, n, [&](int64_t t0, int64_t t1) {
        rms_norm(hn + t0 * e, post_norm.data(), hn + t0 * e, t1 - t0, e, h.rms_eps);
      });
    }
    add_inplace(x, hn, n * e);
  };
  matmul(L.wo, s.o.data(), n, hn, pool, opts_.decode_activations);
  add_output(L.post_attn_norm);

  over_tokens(pool, n, [&](int64_t t0, int64_t t1) {
    rms_norm(x + t0 * e, L.ffn_norm.data(), hn + t0 * e, t1 - t0, e, h.rms_eps);
  });
  gated_ffn(ffn_, L.w_gate, L.w_up, L.w_down, hn, n, s.gate.data(), s.up.data(), hn, pool, opts_.decode_activations);
  add_output(L.post_ffn_norm);
}

void Transformer::layer_chunk(int il, float* x, const int32_t* pos, const std::vector<RopeAngles>& rot, int64_t first, int64_t n,
                        KvStore& kv, Scratch& s, ThreadPool& pool, LayerObserver* observer) const {
  const ModelHparams& h = hp_;
  project_qkv(il, x, rot, first, n, s, pool);
  kv.append(il, n, s.k.data(), s.v.data(), pos);
  attention(s.q.data(), pos, n, h.n_head, h.head_dim, kv.layer(il), s.o.data(), pool, s.lse.data());
  if (observer) observer->queries(il, n, s.q.data(), pos, s.lse.data(), kv);
  finish_layer(il, x, n, s, pool);
}

void Transformer::output_logits(const float* x, int64_t n, std::vector<float>& logits, ThreadPool& pool) const {
  const ModelHparams& h = hp_;
  AlignedVector<float> hn(n * h.n_embd);
  rms_norm(x, output_norm_.data(), hn.data(), n, h.n_embd, h.rms_eps);
  logits.resize(n * h.n_vocab);
  matmul(output_, hn.data(), n, logits.data(), pool, opts_.decode_activations);
  if (final_softcap_ > 0) {
    for (float& l : logits) l = final_softcap_ * std::tanh(l / final_softcap_);
  }
}

std::unique_ptr<ForwardPass> Transformer::begin_forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                                  KvStore& kv, LogitsMode mode, std::vector<float>& logits,
                                                  ThreadPool& pool, LayerObserver* observer) const {
  if (positions.size() != tokens.size()) {
    fail(ErrorKind::kInvalidArgument, "{} tokens but {} positions", tokens.size(), positions.size());
  }
  return std::make_unique<TransformerPass>(*this, tokens, positions, kv, mode, logits, pool, observer);
}

void Transformer::decode_batch(std::span<const DecodeRow> rows, std::vector<float>& logits, ThreadPool& pool) const {
  const ModelHparams& h = hp_;
  const int64_t e = h.n_embd, nq = h.n_head * h.head_dim, nkv = h.n_head_kv * h.head_dim;
  // The rows' tokens one after another: row b's are first[b] .. first[b + 1] - 1.
  std::vector<int64_t> first = {0};
  std::vector<int32_t> tokens, pos;
  std::vector<int32_t> singles;  // rows of one token: their attention runs in one call
  for (size_t b = 0; b < rows.size(); ++b) {
    const int64_t m = static_cast<int64_t>(rows[b].tokens.size());
    if (m < 1 || m > kMaxRowTokens) {
      fail(ErrorKind::kInvalidArgument, "decode_batch: a row of {} tokens (1 to {})", m, kMaxRowTokens);
    }
    if (m == 1) singles.push_back(static_cast<int32_t>(first.back()));
    tokens.insert(tokens.end(), rows[b].tokens.begin(), rows[b].tokens.end());
    for (int64_t t = 0; t < m; ++t) pos.push_back(rows[b].pos + static_cast<int32_t>(t));
    first.push_back(first.back() + m);
  }
  const int64_t n = first.back(), n1 = static_cast<int64_t>(singles.size());
  if (n == 0) {
    logits.clear();
    return;
  }
  std::vector<float> x(n * e);  // one residual row per token
  embed(tokens, x.data());
  const std::vector<RopeAngles> rot = angles(pos);
  Scratch s(h, n);
  // Every row of one token (the usual batch): their queries and outputs in place when all rows
  // are such, else gathered.
  const bool all_single = n1 == n;
  std::vector<float> q1(all_single ? 0 : n1 * nq), o1(all_single ? 0 : n1 * nq), lse1(all_single ? 0 : n1 * h.n_head);
  std::vector<int32_t> pos1(n1);
  std::vector<std::span<const KvHeadView>> views1(n1);
  for (int il = 0; il < h.n_layer; ++il) {
    project_qkv(il, x.data(), rot, 0, n, s, pool);
    // Attention is the only per-sequence part: each row reads its own cache.
    for (size_t b = 0, j = 0; b < rows.size(); ++b) {
      const int64_t t0 = first[b], m = first[b + 1] - t0;
      KvStore& kv = *rows[b].kv;
      kv.append(il, m, s.k.data() + t0 * nkv, s.v.data() + t0 * nkv, &pos[t0]);
      if (m == 1) {
        views1[j] = kv.layer(il);
        pos1[j] = pos[t0];
        if (!all_single) std::copy_n(s.q.data() + t0 * nq, nq, q1.data() + j * nq);
        ++j;
      } else {
        attention(s.q.data() + t0 * nq, &pos[t0], m, h.n_head, h.head_dim, kv.layer(il), s.o.data() + t0 * nq, pool,
                  s.lse.data() + t0 * h.n_head);
      }
    }
    if (all_single) {
      attention_decode(s.q.data(), pos1.data(), static_cast<int>(n1), h.n_head, h.head_dim, views1, s.o.data(), pool,
                       s.lse.data());
    } else if (n1 > 0) {
      attention_decode(q1.data(), pos1.data(), static_cast<int>(n1), h.n_head, h.head_dim, views1, o1.data(), pool,
                       lse1.data());
      for (int64_t j = 0; j < n1; ++j) {
        std::copy_n(o1.data() + j * nq, nq, s.o.data() + singles[j] * nq);
        std::copy_n(lse1.data() + j * h.n_head, h.n_head, s.lse.data() + singles[j] * h.n_head);
      }
    }
    for (size_t b = 0; b < rows.size(); ++b) {
      const int64_t t0 = first[b];
      if (rows[b].observer) {
        rows[b].observer->queries(il, first[b + 1] - t0, s.q.data() + t0 * nq, &pos[t0], s.lse.data() + t0 * h.n_head,
                                  *rows[b].kv);
      }
    }
    finish_layer(il, x.data(), n, s, pool);
    for (const DecodeRow& r : rows) {
      if (r.observer) r.observer->layer_done(il);
    }
  }
  output_logits(x.data(), n, logits, pool);
}

}  // namespace

std::unique_ptr<Decoder> make_transformer(const GgufFile& file, const DecoderOptions& options, DescribeArch describe,
                                          ThreadPool* pool) {
  return std::make_unique<Transformer>(file, options, describe, pool);
}

}  // namespace snapkv

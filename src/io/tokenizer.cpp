// Tokenizer: reading the vocabulary from GGUF, splitting text on special tokens, and the
// parts of encode/decode shared by the BPE and SentencePiece backends.
#include "snapkv/tokenizer.h"

#include <algorithm>
#include <cmath>

#include "io/gguf.h"
#include "io/tokenizer_pretok.h"
#include "io/tokenizer_vocab.h"
#include "util/error.h"

namespace snapkv {

using tokenizer_detail::Backend;
using tokenizer_detail::SpecialMatcher;
using tokenizer_detail::Vocab;

namespace {

// Control-token texts that end a turn in the chat formats we know, beyond the file's EOS/EOT.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>",    "<|end|>",          "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>",            "<|end_of_text|>",
    "<end_of_utterance>", "<|return|>", "<|END_OF_TURN_TOKEN|>",
};
// When the file names no EOT token, the first of these that is a control token is taken.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<end_of_turn>",
                                          "<|end|>", "<EOT>", "<|END_OF_TURN_TOKEN|>"};

int32_t read_id(const GgufFile& g, std::string_view key, int32_t n_vocab, int32_t fallback) {
  const GgufValue* v = g.find(key);
  if (v == nullptr || !v->is_integer()) return fallback;
  return v->i >= 0 && v->i < n_vocab ? static_cast<int32_t>(v->i) : -1;
}

bool special_type(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined;
}

void load_vocab(const GgufFile& g, Vocab& v) {
  v.model = std::string(g.get_string("tokenizer.ggml.model", ""));
  v.pre = std::string(g.get_string("tokenizer.ggml.pre", ""));
  if (v.model.empty()) {
    fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.model is missing (no tokenizer in this file)",
         g.path());
  }
  if (v.model != "gpt2" && v.model != "llama") {
    fail(ErrorKind::kUnsupported,
         "{}: tokenizer model \"{}\" is not supported (supported: \"gpt2\" byte-level BPE, "
         "\"llama\" SentencePiece)", g.path(), v.model);
  }
  if (!g.has("tokenizer.ggml.tokens")) {
    fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.tokens is missing", g.path());
  }
  const auto& tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty() || tokens.size() > (1u << 30)) {
    fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.tokens has {} entries", g.path(), tokens.size());
  }
  const size_t n = tokens.size();
  v.text.assign(tokens.begin(), tokens.end());
  v.type.assign(n, TokenType::kNormal);
  if (g.has("tokenizer.ggml.token_type")) {
    const auto types = g.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n) {
      fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.token_type has {} entries for {} tokens",
           g.path(), types.size(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      v.type[i] = types[i] >= 0 && types[i] <= 6 ? static_cast<TokenType>(types[i])
                                                 : TokenType::kUndefined;
    }
  }
  if (v.model == "llama") {
    v.score.assign(n, 0.0f);
    if (g.has("tokenizer.ggml.scores")) {
      v.score = g.get_float_array("tokenizer.ggml.scores");
      if (v.score.size() != n) {
        fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.scores has {} entries for {} tokens",
             g.path(), v.score.size(), n);
      }
      for (float& s : v.score) {
        if (std::isnan(s)) s = -INFINITY;
      }
    }
  }
  v.index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // A repeated text maps to its first id (HF keeps the last, but files with repeats are
    // broken anyway; the first is what llama.cpp uses).
    v.index.emplace(v.text[i], static_cast<int32_t>(i));
  }
}

void load_specials(const GgufFile& g, Vocab& v) {
  const int32_t n = v.n();
  const bool spm = v.model == "llama";
  auto default_id = [&](int32_t id) { return spm && id < n ? id : -1; };
  v.bos = read_id(g, "tokenizer.ggml.bos_token_id", n, default_id(1));
  v.eos = read_id(g, "tokenizer.ggml.eos_token_id", n, default_id(2));
  v.unk = read_id(g, "tokenizer.ggml.unknown_token_id", n, default_id(0));
  v.pad = read_id(g, "tokenizer.ggml.padding_token_id", n, -1);
  v.eot = read_id(g, "tokenizer.ggml.eot_token_id", n, -1);
  v.eom = read_id(g, "tokenizer.ggml.eom_token_id", n, -1);
  auto control_named = [&](std::string_view text) {
    const int32_t id = v.find(text);
    return id >= 0 && special_type(v.type[id]) ? id : -1;
  };
  if (v.eot < 0) {
    for (std::string_view t : kEotTexts) {
      if ((v.eot = control_named(t)) >= 0) break;
    }
  }
  if (v.eom < 0) v.eom = control_named("<|eom_id|>");

  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id >= 0) v.eog.push_back(id);
  }
  for (std::string_view t : kEndOfTurnTexts) {
    if (const int32_t id = control_named(t); id >= 0) v.eog.push_back(id);
  }
  std::sort(v.eog.begin(), v.eog.end());
  v.eog.erase(std::unique(v.eog.begin(), v.eog.end()), v.eog.end());

  const bool llama3 = v.pre == "llama-bpe" || v.pre == "llama3" || v.pre == "llama-v3";
  v.add_bos = g.get_bool("tokenizer.ggml.add_bos_token", spm || llama3);
  v.add_eos = g.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = spm && g.get_bool("tokenizer.ggml.add_space_prefix", true);
}

}  // namespace

namespace tokenizer_detail {

int32_t SpecialMatcher::child(int32_t node, uint8_t b) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), b,
                             [](const auto& e, uint8_t x) { return e.first < x; });
  return it != next.end() && it->first == b ? it->second : -1;
}

void SpecialMatcher::add(std::string_view text, int32_t id, bool always) {
  if (text.empty()) return;
  int32_t node = 0;
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    int32_t nx = child(node, b);
    if (nx < 0) {
      nx = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& next = nodes_[node].next;
      auto it = std::lower_bound(next.begin(), next.end(), b,
                                 [](const auto& e, uint8_t x) { return e.first < x; });
      next.insert(it, {b, nx});
    }
    node = nx;
  }
  if (nodes_[node].id < 0) {  // the first id with this text wins, as in Vocab::index
    nodes_[node].id = id;
    nodes_[node].always = always;
  }
}

SpecialMatcher::Match SpecialMatcher::find(std::string_view text, size_t from,
                                           bool parse_special) const {
  for (size_t pos = from; pos < text.size(); ++pos) {
    Match best;
    int32_t node = 0;
    for (size_t k = pos; k < text.size(); ++k) {
      node = child(node, static_cast<uint8_t>(text[k]));
      if (node < 0) break;
      const Node& nd = nodes_[node];
      if (nd.id >= 0 && (parse_special || nd.always)) best = Match{pos, k + 1 - pos, nd.id};
    }
    if (best.len > 0) return best;
  }
  return Match{text.size(), 0, -1};
}

}  // namespace tokenizer_detail

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->vocab_ = std::make_unique<Vocab>();
  Vocab& v = *t->vocab_;
  load_vocab(gguf, v);
  load_specials(gguf, v);
  if (v.model == "gpt2") {
    v.pre_known = tokenizer_detail::PreTokenizer::is_known(v.pre);
    t->backend_ = tokenizer_detail::make_bpe_backend(v, gguf);
  } else {
    t->backend_ = tokenizer_detail::make_spm_backend(v);
  }
  t->special_ = std::make_unique<SpecialMatcher>();
  for (int32_t id = 0; id < v.n(); ++id) {
    const TokenType ty = v.type[id];
    if (!special_type(ty)) continue;
    const bool user = ty == TokenType::kUserDefined;
    if (user && v.model == "llama" && v.text[id].find(' ') != std::string::npos) {
      // llama.cpp's converter spells these with spaces ("  " in Gemma); HF's tokenizer.json
      // has them as "▁▁", added tokens matched in the raw text, so that spelling is what is
      // matched here. Real spaces reach the backend, which matches them after escaping.
      t->special_->add(tokenizer_detail::spm_escape(v.text[id]), id, true);
    } else {
      t->special_->add(v.text[id], id, user);
    }
  }
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special,
                                       bool add_eos) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && vocab_->bos >= 0) out.push_back(vocab_->bos);
  bool first_in_run = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto m = special_->find(text, pos, parse_special);
    if (m.pos > pos) backend_->encode_fragment(text.substr(pos, m.pos - pos), first_in_run, out);
    if (m.len == 0) break;
    out.push_back(m.id);
    first_in_run = true;
    pos = m.pos + m.len;
  }
  if (add_eos && vocab_->eos >= 0) out.push_back(vocab_->eos);
  return out;
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_->n()) {
    fail(ErrorKind::kInvalidArgument, "token id {} is outside the vocabulary (0..{})", id,
         vocab_->n() - 1);
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    check_id(id);
    const TokenType t = vocab_->type[id];
    if (!render_special && (t == TokenType::kControl || t == TokenType::kUnknown)) continue;
    kept.push_back(id);
  }
  return backend_->decode(kept);
}

std::string Tokenizer::token_piece(int32_t id) const {
  check_id(id);
  return backend_->piece(id);
}

const std::string& Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_->text[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_->type[id];
}

int32_t Tokenizer::find_token(std::string_view text) const { return vocab_->find(text); }
int32_t Tokenizer::n_vocab() const { return vocab_->n(); }
TokenizerKind Tokenizer::kind() const {
  return vocab_->model == "gpt2" ? TokenizerKind::kBpe : TokenizerKind::kSpm;
}
const std::string& Tokenizer::model_name() const { return vocab_->model; }
const std::string& Tokenizer::pre_name() const { return vocab_->pre; }
bool Tokenizer::pre_known() const { return vocab_->pre_known; }
int32_t Tokenizer::bos_id() const { return vocab_->bos; }
int32_t Tokenizer::eos_id() const { return vocab_->eos; }
int32_t Tokenizer::eot_id() const { return vocab_->eot; }
int32_t Tokenizer::pad_id() const { return vocab_->pad; }
int32_t Tokenizer::unk_id() const { return vocab_->unk; }
bool Tokenizer::add_bos() const { return vocab_->add_bos; }
bool Tokenizer::add_eos() const { return vocab_->add_eos; }
bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(vocab_->eog.begin(), vocab_->eog.end(), id);
}
const std::vector<int32_t>& Tokenizer::eog_ids() const { return vocab_->eog; }

}  // namespace snapkv

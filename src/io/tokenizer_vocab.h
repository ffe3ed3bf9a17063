#pragma once
// Internals shared by the tokenizer files: the vocabulary and the per-model backends.
// Not part of the public API (see tokenizer.h).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "snapkv/tokenizer.h"

namespace snapkv {
class GgufFile;
}

namespace snapkv::tokenizer_detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> text;  // [n_vocab] as stored in the file
  std::vector<TokenType> type;    // [n_vocab]
  std::vector<float> score;       // [n_vocab] (SentencePiece only; empty otherwise)
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> index;

  std::string model;
  std::string pre;
  bool pre_known = true;
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, pad = -1, unk = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::vector<int32_t> eog;  // sorted

  int32_t n() const { return static_cast<int32_t>(text.size()); }
  int32_t find(std::string_view s) const {
    auto it = index.find(s);
    return it == index.end() ? -1 : it->second;
  }
};

// One tokenizer model: encodes text that holds no special token, and renders tokens to bytes.
class Backend {
 public:
  virtual ~Backend() = default;
  // Appends the ids of one fragment of text (the text between special tokens).
  // first_in_run: the fragment starts the text or follows a special token (SentencePiece adds
  // its space prefix there).
  virtual void encode_fragment(std::string_view text, bool first_in_run,
                               std::vector<int32_t>& out) const = 0;
  // The bytes of one token (token_piece semantics).
  virtual std::string piece(int32_t id) const = 0;
  // Token ids to text (decode semantics, render_special already applied by the caller: ids
  // holds only the tokens to render).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
};

std::unique_ptr<Backend> make_bpe_backend(const Vocab& vocab, const GgufFile& gguf);
std::unique_ptr<Backend> make_spm_backend(const Vocab& vocab);

// SentencePiece's escaping: every space becomes U+2581 "▁".
std::string spm_escape(std::string_view text);

// Leftmost-longest matcher over the special and user-defined token texts (a byte trie).
class SpecialMatcher {
 public:
  // Adds a token text; `always` tokens match even when parse_special is false.
  void add(std::string_view text, int32_t id, bool always);
  struct Match {
    size_t pos = 0, len = 0;
    int32_t id = -1;
  };
  // The first match at or after `from`; len == 0 when there is none.
  Match find(std::string_view text, size_t from, bool parse_special) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t id = -1;
    bool always = false;
  };
  int32_t child(int32_t node, uint8_t b) const;
  std::vector<Node> nodes_ = std::vector<Node>(1);
};

}  // namespace snapkv::tokenizer_detail

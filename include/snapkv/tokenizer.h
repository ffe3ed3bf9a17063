#pragma once
// Tokenizers built from GGUF metadata (the tokenizer.ggml.* keys), matching Hugging Face
// `tokenizers` on the same vocabulary:
//   - "gpt2": byte-level BPE. Text is split on special tokens, then by the pre-tokenizer regexes
//     chosen by tokenizer.ggml.pre (see tokenizer_pretok.h for the supported names and the
//     default), each piece is mapped byte by byte to GPT-2's printable alphabet and merged by
//     the ranked merges in tokenizer.ggml.merges.
//   - "llama": SentencePiece BPE. Spaces become U+2581 ("▁"), one is prepended to each text
//     fragment when tokenizer.ggml.add_space_prefix is true (the default), symbols are merged
//     by the score of the result (tokenizer.ggml.scores), and characters outside the vocabulary
//     fall back to the byte tokens <0xXX>, or to the unknown token when those are missing.
// Any byte sequence is accepted: invalid UTF-8 is tokenized byte by byte (never an exception or
// a crash), and decode() always returns valid UTF-8.
// No Unicode normalization is applied (as in llama.cpp): vocabularies whose HF tokenizer
// normalizes first (Qwen2: NFC) agree with HF only on text that is already normalized.
//
// A Tokenizer is immutable after construction; every const method may be called from several
// threads at once. It copies what it needs, so it outlives the GgufFile it was built from.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

class GgufFile;

// tokenizer.ggml.token_type values (the SentencePiece piece types).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <|im_start|>, <s>: matched in text only when parse_special is true
  kUserDefined = 4,  // always matched in text as one token
  kUnused = 5,
  kByte = 6,         // <0xXX> byte-fallback tokens (SentencePiece)
};

enum class TokenizerKind { kBpe, kSpm };

namespace tokenizer_detail {
struct Vocab;
class Backend;
class SpecialMatcher;
}  // namespace tokenizer_detail

class Tokenizer {
 public:
  // Builds the tokenizer described by the file's tokenizer.ggml.* metadata.
  // Throws Error(kBadFile) when tokenizer.ggml.tokens is missing or empty, or when the
  // per-token arrays (token_type, scores) do not have one entry per token;
  // Error(kUnsupported) naming tokenizer.ggml.model when it is neither "gpt2" nor "llama".
  // Special-token ids (bos, eos, ...) outside the vocabulary are treated as absent.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text to token ids. add_bos prepends bos_id() and add_eos appends eos_id() (each only when
  // the vocabulary has that token); pass add_bos() / add_eos() for the model's own rule.
  // parse_special: control and unknown tokens written in the text ("<|im_start|>") become
  // their ids; when false they are tokenized as plain text. User-defined tokens are always
  // matched. Matching is leftmost-longest, like HF's added-token splitter.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = true,
                              bool add_eos = false) const;

  // Token ids to UTF-8 text. Control and unknown tokens are written out (their vocabulary text)
  // when render_special is true and skipped otherwise. Byte sequences that do not form valid
  // UTF-8 become U+FFFD (as HF's decoders do). SentencePiece: the space added by
  // add_space_prefix is removed from the start of the result.
  // Throws Error(kInvalidArgument) for an id outside [0, n_vocab()).
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // The raw bytes one token stands for, for streaming: byte-level pieces and <0xXX> tokens may
  // be parts of one UTF-8 character, so the caller buffers until the bytes are complete.
  // "▁" is already a space (including the leading one of a SentencePiece prompt); control
  // tokens give their text. Throws Error(kInvalidArgument) for an id out of range.
  std::string token_piece(int32_t id) const;

  // The vocabulary entry as stored in the file (byte-level or "▁" form).
  // Throws Error(kInvalidArgument) for an id out of range.
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // Exact lookup of a vocabulary entry; -1 when absent.
  int32_t find_token(std::string_view text) const;

  int32_t n_vocab() const;
  TokenizerKind kind() const;
  // tokenizer.ggml.model and tokenizer.ggml.pre as found in the file ("" when absent).
  const std::string& model_name() const;
  const std::string& pre_name() const;
  // False when tokenizer.ggml.pre named a pre-tokenizer this engine does not know, in which case
  // the GPT-2 rules are used; callers may warn.
  bool pre_known() const;

  // Special ids; -1 when the vocabulary has none.
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t eot_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;
  // tokenizer.ggml.add_bos_token / add_eos_token, defaulting as llama.cpp does: BOS for
  // SentencePiece and for Llama-3 ("llama-bpe"), none otherwise; never EOS.
  bool add_bos() const;
  bool add_eos() const;
  // End of generation: EOS, EOT, EOM, and control tokens whose text is a known end-of-turn
  // marker (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, <|end|>, ...).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;

 private:
  Tokenizer();
  void check_id(int32_t id) const;

  std::unique_ptr<tokenizer_detail::Vocab> vocab_;
  std::unique_ptr<tokenizer_detail::Backend> backend_;
  std::unique_ptr<tokenizer_detail::SpecialMatcher> special_;
};

}  // namespace snapkv

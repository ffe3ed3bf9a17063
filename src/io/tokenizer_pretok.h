#pragma once
// Regex pre-tokenizers of byte-level BPE vocabularies, chosen by tokenizer.ggml.pre.
//
// Each pre-tokenizer is a sequence of stages; a stage splits every piece of the previous stage
// into its regex matches and the text between them ("Isolated" splitting in HF terms), and the
// regex sees only that piece (a lookahead stops at the piece's end), as in HF `tokenizers`.
// Regexes run on PCRE2 with UTF + UCP (JIT when available); \s means Unicode White_Space,
// as in Oniguruma, which HF uses (PCRE2's own \s adds U+180E).
//
// Supported names (rules copied from each model's tokenizer.json, checked against HF):
//   "smollm"     individual digits (\p{N}), then the GPT-2 regex      (SmolLM, SmolLM2)
//   "llama-bpe"  Llama-3: (?i:'s|'t|...), \p{N}{1,3}, newline-aware   (Llama-3.x)
//   "qwen2"      Qwen2: as Llama-3 but single digits                  (Qwen2, Qwen2.5)
//   "gpt-2"      the GPT-2 regex: 's|'t|'re|... | ?\p{L}+| ?\p{N}+|...
// and aliases that llama.cpp groups with them (starcoder, refact, command-r, codeshell,
// exaone, minerva -> smollm rules; llama3, llama-v3, falcon3 -> llama-bpe; deepseek-r1-qwen ->
// qwen2; phi-2, mpt, olmo, jais, default -> gpt-2).
// Any other name falls back to the GPT-2 regex (known() is then false): it is the rule most
// byte-level vocabularies were trained with, and it never splits worse than whole words.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv::tokenizer_detail {

class Regex;

class PreTokenizer {
 public:
  explicit PreTokenizer(std::string_view pre_name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Whether `pre_name` is one of the names above (else the GPT-2 default applies).
  static bool is_known(std::string_view pre_name);
  bool known() const { return known_; }
  // Llama-3 vocabularies use whole pre-tokens found in the vocabulary as is (HF ignore_merges).
  bool ignore_merges() const { return ignore_merges_; }
  // Splits text into pieces (views into text, in order, covering all of it).
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  std::vector<std::unique_ptr<Regex>> stages_;
  bool known_ = true;
  bool ignore_merges_ = false;
};

// Expands \s and \S in a pattern to the explicit Unicode White_Space set (inside and outside
// character classes). Exposed for tests.
std::string expand_whitespace_classes(std::string_view pattern);

}  // namespace snapkv::tokenizer_detail

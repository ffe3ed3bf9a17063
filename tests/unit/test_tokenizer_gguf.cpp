// Tokenizers from small hand-built GGUF vocabularies: the merge rules worked out by hand, and
// the errors for files that are not usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "io/tokenizer_pretok.h"
#include "support/gguf_writer.h"
#include "util/error.h"

namespace snapkv {
namespace {

using test::GgufWriter;

struct Built {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

Built build(const GgufWriter& w) {
  Built b;
  b.bytes = w.bytes();
  b.file = GgufFile::parse(b.bytes.data(), b.bytes.size(), "test.gguf");
  b.tok = Tokenizer::from_gguf(*b.file);
  return b;
}

ErrorKind error_kind_of(const GgufWriter& w, std::string* message) {
  try {
    build(w);
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::kInternal;
}

const std::string kSp = "\xE2\x96\x81";  // ▁

// A SentencePiece vocabulary: control tokens, the 256 byte tokens, then scored pieces.
struct SpmVocab {
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  std::vector<float> scores{0, 0, 0};
  std::vector<int32_t> types{2, 3, 3};
  SpmVocab() {
    for (int b = 0; b < 256; ++b) {
      tokens.push_back(fmt::format("<0x{:02X}>", b));
      scores.push_back(0);
      types.push_back(6);
    }
  }
  int32_t add(const std::string& t, float score, int32_t type = 1) {
    tokens.push_back(t);
    scores.push_back(score);
    types.push_back(type);
    return static_cast<int32_t>(tokens.size() - 1);
  }
  GgufWriter writer(bool space_prefix = true) const {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_f32s("tokenizer.ggml.scores", scores);
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    w.add_u32("tokenizer.ggml.unknown_token_id", 0);
    w.add_bool("tokenizer.ggml.add_space_prefix", space_prefix);
    return w;
  }
};

TEST(TokenizerSpm, MergesByScore) {
  SpmVocab v;
  const int32_t sp = v.add(kSp, -1);
  v.add("h", -2);
  v.add("e", -3);
  const int32_t l = v.add("l", -4), o = v.add("o", -5);
  v.add("ll", -6);
  const int32_t he = v.add("he", -7), hell = v.add("hell", -8), hello = v.add("hello", -9);
  v.add(kSp + "h", -20);  // scores lower than "he": never formed here
  const auto b = build(v.writer());
  const Tokenizer& t = *b.tok;
  EXPECT_EQ(t.kind(), TokenizerKind::kSpm);
  EXPECT_TRUE(t.add_bos());
  // ▁ h e l l o: "ll"(-6) then "he"(-7) then "hell"(-8) then "hello"(-9); ▁h never forms.
  EXPECT_EQ(t.encode("hello", false), (std::vector<int32_t>{sp, hello}));
  EXPECT_EQ(t.encode("hello", true), (std::vector<int32_t>{1, sp, hello}));
  EXPECT_EQ(t.encode("hell o", false), (std::vector<int32_t>{sp, hell, sp, o}));
  EXPECT_EQ(t.encode("hel", false), (std::vector<int32_t>{sp, he, l}));
  EXPECT_EQ(t.decode(t.encode("hello hell", true)), "hello hell");
  EXPECT_EQ(t.decode(t.encode("hello", true), true), "<s> hello");
}

TEST(TokenizerSpm, TiesGoLeftmost) {
  SpmVocab v;
  const int32_t a = v.add("a", -1), aa = v.add("aa", -2);
  const auto b = build(v.writer(false));
  EXPECT_EQ(b.tok->encode("aaa", false), (std::vector<int32_t>{aa, a}));
  EXPECT_EQ(b.tok->encode("aaaa", false), (std::vector<int32_t>{aa, aa}));
}

TEST(TokenizerSpm, ByteFallbackAndUnknown) {
  SpmVocab v;
  const int32_t sp = v.add(kSp, -1), x = v.add("x", -2);
  const auto b = build(v.writer());
  const Tokenizer& t = *b.tok;
  // "é" is no piece: its two UTF-8 bytes.
  EXPECT_EQ(t.encode("x\xC3\xA9", false),
            (std::vector<int32_t>{sp, x, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.decode(t.encode("x\xC3\xA9", false)), "x\xC3\xA9");
  // Invalid UTF-8 goes byte by byte; a lone byte token decodes to U+FFFD.
  EXPECT_EQ(t.encode("\xFF", false), (std::vector<int32_t>{sp, 3 + 0xFF}));
  EXPECT_EQ(t.decode(t.encode("\xFF", false)), "\xEF\xBF\xBD");
  EXPECT_EQ(t.token_piece(3 + 0xFF), "\xFF");

  // Without byte tokens the unknown token stands in.
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", kSp, "x"});
  w.add_f32s("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
  w.add_i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  const auto nb = build(w);
  EXPECT_EQ(nb.tok->encode("x\xC3\xA9x", false), (std::vector<int32_t>{3, 4, 0, 4}));
  EXPECT_EQ(nb.tok->decode(std::vector<int32_t>{3, 4, 0, 4}, true), "x<unk>x");
  EXPECT_EQ(nb.tok->decode(std::vector<int32_t>{3, 4, 0, 4}, false), "xx");
}

TEST(TokenizerSpm, UnusedPiecesAreSplitBack) {
  SpmVocab v;
  const int32_t a = v.add("a", -1), bb = v.add("b", -2);
  v.add("ab", -3, /*type unused*/ 5);
  const auto b = build(v.writer(false));
  EXPECT_EQ(b.tok->encode("ab", false), (std::vector<int32_t>{a, bb}));
}

TEST(TokenizerSpm, SpacePrefixPerFragment) {
  SpmVocab v;
  const int32_t sp = v.add(kSp, -1);
  v.add("x", -2);
  const int32_t spx = v.add(kSp + "x", -3);
  const auto b = build(v.writer());
  const Tokenizer& t = *b.tok;
  // As HF's legacy Llama tokenizer: every text fragment after a special token gets "▁".
  EXPECT_EQ(t.encode("x</s>x", false, true), (std::vector<int32_t>{spx, 2, spx}));
  // Not parsed: "</s>" is text, its characters become bytes.
  const auto plain = t.encode("x</s>", false, false);
  EXPECT_EQ(plain.front(), spx);
  EXPECT_EQ(plain.size(), 5u);
  EXPECT_EQ(t.encode(" x", false), (std::vector<int32_t>{sp, spx}));
  EXPECT_EQ(t.decode(t.encode(" x", false)), " x");
  EXPECT_TRUE(t.encode("", false).empty());
}

TEST(TokenizerSpm, UserDefinedSpaceRuns) {
  // Gemma's runs of spaces: user-defined pieces that llama.cpp's converter writes with real
  // spaces. They are taken whole, longest first, in the escaped text (as sentencepiece does);
  // written with "▁" in the text they match there already (HF's added tokens).
  SpmVocab v;
  v.add(kSp, -1);
  const int32_t a = v.add("a", -2), b = v.add("b", -3), spb = v.add(kSp + "b", -4);
  const int32_t s2 = v.add("  ", -1000, 4), s3 = v.add("   ", -1000, 4);
  const auto built = build(v.writer(false));
  const Tokenizer& t = *built.tok;
  for (bool special : {true, false}) {
    EXPECT_EQ(t.encode("a  b", false, special), (std::vector<int32_t>{a, s2, b}));
    EXPECT_EQ(t.encode("a    b", false, special), (std::vector<int32_t>{a, s3, spb}));
    EXPECT_EQ(t.encode(kSp + kSp + " b", false, special), (std::vector<int32_t>{s2, spb}));
    EXPECT_EQ(t.encode(kSp + " b", false, special), (std::vector<int32_t>{s2, b}));
  }
  EXPECT_EQ(t.decode(std::vector<int32_t>{a, s3, spb}), "a    b");
  EXPECT_EQ(t.token_piece(s2), "  ");
}

GgufWriter bpe_writer(const std::vector<std::string>& extra_tokens,
                      const std::vector<std::string>& merges, std::string_view pre) {
  // All 256 byte-level characters, then the extra tokens.
  std::vector<std::string> tokens;
  uint32_t next = 256;  // GPT-2's images of the non-printable bytes
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    tokens.push_back(s);
  }
  tokens.insert(tokens.end(), extra_tokens.begin(), extra_tokens.end());
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_strings("tokenizer.ggml.merges", merges);
  return w;
}

TEST(TokenizerBpe, RankOrderAndTies) {
  // Token ids: bytes are their own index for printable ASCII ('a' = 97).
  const auto b = build(bpe_writer({"aa", "ab", "aab", "\xC4\xA0" "a"}, {"a b", "a a", "aa b"},
                                  "gpt-2"));
  const Tokenizer& t = *b.tok;
  EXPECT_EQ(t.kind(), TokenizerKind::kBpe);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.bos_id(), -1);
  // "a b" has rank 0: aab -> a + ab, and "aa b" never applies.
  EXPECT_EQ(t.encode("aab", false), (std::vector<int32_t>{'a', 257}));
  // Equal ranks merge leftmost first: aaa -> aa + a.
  EXPECT_EQ(t.encode("aaa", false), (std::vector<int32_t>{256, 'a'}));
  // " a" is one pre-token; no merge "Ġ a" exists, so it stays two symbols.
  EXPECT_EQ(t.encode(" a", false), (std::vector<int32_t>{t.find_token("\xC4\xA0"), 'a'}));
  EXPECT_EQ(t.decode(t.encode("aab aaa", false)), "aab aaa");
}

TEST(TokenizerBpe, UnknownPreTokenizerFallsBackToGpt2) {
  const auto b = build(bpe_writer({}, {}, "some-new-model"));
  EXPECT_FALSE(b.tok->pre_known());
  EXPECT_EQ(b.tok->pre_name(), "some-new-model");
  EXPECT_EQ(b.tok->decode(b.tok->encode("it's 42 ok", false)), "it's 42 ok");
}

TEST(TokenizerErrors, UnsupportedModelIsNamed) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "bert");
  w.add_strings("tokenizer.ggml.tokens", {"[PAD]", "a"});
  std::string msg;
  EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("\"bert\""), std::string::npos) << msg;
}

TEST(TokenizerErrors, BadVocabularies) {
  std::string msg;
  {
    GgufWriter w;  // no tokenizer at all
    w.add_string("general.architecture", "llama");
    EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kBadFile);
    EXPECT_NE(msg.find("tokenizer.ggml.model"), std::string::npos) << msg;
  }
  {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kBadFile);
    EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;
  }
  {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
    w.add_i32s("tokenizer.ggml.token_type", {1});
    EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kBadFile);
    EXPECT_NE(msg.find("token_type"), std::string::npos) << msg;
  }
  {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
    w.add_f32s("tokenizer.ggml.scores", {1, 2, 3});
    EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kBadFile);
    EXPECT_NE(msg.find("scores"), std::string::npos) << msg;
  }
  {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
    EXPECT_EQ(error_kind_of(w, &msg), ErrorKind::kBadFile);
    EXPECT_NE(msg.find("merges"), std::string::npos) << msg;
  }
  {
    GgufWriter w;  // out-of-range special ids are treated as absent
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
    w.add_u32("tokenizer.ggml.bos_token_id", 7);
    w.add_i32("tokenizer.ggml.eos_token_id", -1);
    const auto b = build(w);
    EXPECT_EQ(b.tok->bos_id(), -1);
    EXPECT_EQ(b.tok->eos_id(), -1);
    // No BOS/EOS added; "▁" is no piece and there are no byte tokens: the unknown token
    // (id 0 by default for SentencePiece), then "a".
    EXPECT_EQ(b.tok->encode("a", true, true, true), (std::vector<int32_t>{0, 0}));
  }
}

TEST(PreTokenizer, WhitespaceIsUnicodeWhiteSpace) {
  using tokenizer_detail::expand_whitespace_classes;
  const std::string ws = expand_whitespace_classes(R"(\s)");
  EXPECT_EQ(ws.front(), '[');
  EXPECT_EQ(expand_whitespace_classes(R"([^\s\p{L}])").find(R"([^\x{9}-\x{D})"), 0u);
  EXPECT_EQ(expand_whitespace_classes(R"(\S)").substr(0, 2), "[^");
  EXPECT_EQ(expand_whitespace_classes(R"(\p{N}|\\s)"), R"(\p{N}|\\s)");
}

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  tokenizer_detail::PreTokenizer p(pre);
  std::vector<std::string_view> pieces;
  p.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Rules) {
  EXPECT_EQ(split("smollm", "ab 123"), (Pieces{"ab", " ", "1", "2", "3"}));
  EXPECT_EQ(split("gpt-2", "ab 123"), (Pieces{"ab", " 123"}));
  EXPECT_EQ(split("llama-bpe", "ab 1234567"), (Pieces{"ab", " ", "123", "456", "7"}));
  EXPECT_EQ(split("qwen2", "12"), (Pieces{"1", "2"}));
  EXPECT_EQ(split("gpt-2", "it's"), (Pieces{"it", "'s"}));
  EXPECT_EQ(split("gpt-2", "IT'S"), (Pieces{"IT", "'", "S"}));
  EXPECT_EQ(split("llama-bpe", "IT'S"), (Pieces{"IT", "'S"}));
  EXPECT_EQ(split("gpt-2", "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("llama-bpe", "a\n\n b"), (Pieces{"a", "\n\n", " b"}));
  // U+180E is not White_Space (PCRE2's \s would say it is).
  EXPECT_EQ(split("gpt-2", "a\xE1\xA0\x8E"), (Pieces{"a", "\xE1\xA0\x8E"}));
  EXPECT_EQ(split("gpt-2", "a\xE3\x80\x80"), (Pieces{"a", "\xE3\x80\x80"}));
  // Invalid UTF-8 is never dropped: it comes out as pieces of its own.
  EXPECT_EQ(split("gpt-2", "ab\xFF" "cd"), (Pieces{"ab", "\xFF", "cd"}));
  EXPECT_TRUE(split("gpt-2", "").empty());
  EXPECT_TRUE(tokenizer_detail::PreTokenizer::is_known("smollm"));
  EXPECT_FALSE(tokenizer_detail::PreTokenizer::is_known("nonsense"));
}

}  // namespace
}  // namespace snapkv

// Tokenizers against Hugging Face `tokenizers` on the same vocabularies (fixtures written by
// tools/reference/make_tokenizer_fixture.py), plus properties that need no reference:
// invalid UTF-8, streaming pieces, very long inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "io/gguf.h"
#include "snapkv/tokenizer.h"
#include "support/paths.h"
#include "util/error.h"

namespace snapkv {
namespace {

struct LoadedTokenizer {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

// A GGUF relative to the source tree (as the fixtures name them), loaded once; nullptr after
// recording a failure that says how to get it. Never skips.
const Tokenizer* tokenizer_for(const std::string& rel_path) {
  static std::map<std::string, LoadedTokenizer> cache;
  auto it = cache.find(rel_path);
  if (it != cache.end()) return it->second.tok.get();
  const std::string path = test::source_dir() + "/" + rel_path;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path << " is missing: run `bash scripts/setup.sh` (it downloads the default "
                  << "model and the vocabulary-only GGUFs under models/vocab/)";
    return nullptr;
  }
  LoadedTokenizer t;
  t.file = GgufFile::open(path);
  t.tok = Tokenizer::from_gguf(*t.file);
  return cache.emplace(rel_path, std::move(t)).first->second.tok.get();
}

nlohmann::json fixture(const std::string& name) {
  std::ifstream in(test::fixture_path(name));
  if (!in.good()) {
    ADD_FAILURE() << "missing fixture tests/fixtures/" << name
                  << " (written by tools/reference/make_tokenizer_fixture.py)";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

// Printable form of a test string: JSON-escaped when it is valid UTF-8, else hex bytes.
std::string show(std::string_view s) {
  std::string j;
  try {
    j = nlohmann::json(std::string(s)).dump();
  } catch (const nlohmann::json::exception&) {
    j = "bytes[";
    for (unsigned char c : s.substr(0, 120)) j += fmt::format("{:02x}", c);
    j += "]";
  }
  if (j.size() > 240) j = j.substr(0, 240) + fmt::format("...({} bytes)", s.size());
  return j;
}

std::string show_ids(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < 40; ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
    if (ids[i] >= 0 && ids[i] < tok.n_vocab()) {
      out += ' ';
      out += show(tok.token_text(ids[i]));
    }
  }
  if (ids.size() > 40) out += fmt::format(", ... ({} ids)", ids.size());
  return out + "]";
}

std::string describe(const Tokenizer& tok, std::string_view what, const std::string& text,
                     const std::vector<int32_t>& want, const std::vector<int32_t>& got) {
  size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
  return fmt::format("{} of {}\n    first difference at index {}\n    HF:  {}\n    ours: {}\n",
                     what, show(text), at, show_ids(tok, want), show_ids(tok, got));
}

// Every fixture case: ids with special tokens parsed, ids with them as plain text, and the
// decoded text (HF's decode with special tokens kept).
void check_fixture(const std::string& name, size_t min_cases) {
  const auto fx = fixture(name);
  if (!fx.contains("cases")) return;
  const Tokenizer* tok = tokenizer_for(fx["gguf"].get<std::string>());
  if (tok == nullptr) return;
  EXPECT_EQ(tok->n_vocab(), fx["n_vocab"].get<int32_t>());
  EXPECT_EQ(tok->model_name(), fx["model"].get<std::string>());
  EXPECT_TRUE(tok->pre_known()) << "pre-tokenizer " << tok->pre_name();
  const auto& cases = fx["cases"];
  EXPECT_GE(cases.size(), min_cases);
  std::string report;
  size_t bad = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto want_plain =
        c.contains("ids_plain") ? c["ids_plain"].get<std::vector<int32_t>>() : want;
    const std::string want_text = c["decoded"].get<std::string>();
    bool ok = true;
    if (const auto got = tok->encode(text, false, true); got != want) {
      report += describe(*tok, "encode", text, want, got);
      ok = false;
    }
    if (const auto got = tok->encode(text, false, false); got != want_plain) {
      report += describe(*tok, "encode (parse_special=false)", text, want_plain, got);
      ok = false;
    }
    if (const auto got = tok->decode(want, true); got != want_text) {
      report += fmt::format("decode of {}\n    HF:   {}\n    ours: {}\n", show(text),
                            show(want_text), show(got));
      ok = false;
    }
    // Streaming: the raw pieces concatenate to the decoded text whenever that is exact.
    if (tok->kind() == TokenizerKind::kBpe && want_text == text) {
      std::string pieces;
      for (int32_t id : want) pieces += tok->token_piece(id);
      if (pieces != text) {
        report += fmt::format("token_piece concatenation of {} gives {}\n", show(text),
                              show(pieces));
        ok = false;
      }
    }
    bad += ok ? 0 : 1;
  }
  EXPECT_EQ(bad, 0u) << name << ": " << bad << " of " << cases.size() << " cases differ from HF\n"
                     << report;
}

TEST(TokenizerHF, SmolLM2) { check_fixture("tokenizer_smollm2.json", 200); }
TEST(TokenizerHF, Llama3Bpe) { check_fixture("tokenizer_llama_bpe.json", 100); }
TEST(TokenizerHF, Qwen2) { check_fixture("tokenizer_qwen2.json", 100); }
TEST(TokenizerHF, Gpt2) { check_fixture("tokenizer_gpt2.json", 100); }
TEST(TokenizerHF, LlamaSpm) { check_fixture("tokenizer_llama_spm.json", 100); }

// Gemma 3's 262,144-token SentencePiece vocabulary, from the real model (scripts/setup.sh
// downloads it; when it is missing, gemma3_model_path() fails the test).
constexpr const char* kGemma3 = "models/gemma-3-270m-q4_k_m.gguf";

bool have_gemma3() { return std::filesystem::exists(test::gemma3_model_path()); }

TEST(TokenizerHF, Gemma3) {
  if (!have_gemma3()) return;
  check_fixture("tokenizer_gemma3.json", 200);
  // Decoding round-trips wherever HF's does, and so do the streamed pieces.
  const auto fx = fixture("tokenizer_gemma3.json");
  const Tokenizer* tok = tokenizer_for(kGemma3);
  if (tok == nullptr || !fx.contains("cases")) return;
  size_t round_trips = 0;
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"].get<std::string>();
    if (c["decoded"].get<std::string>() != text) continue;
    ++round_trips;
    const auto ids = tok->encode(text, false, true);
    EXPECT_EQ(tok->decode(ids, true), text);
    std::string pieces;
    for (int32_t id : ids) pieces += tok->token_piece(id);
    EXPECT_EQ(pieces, text) << "token_piece concatenation of " << show(text);
  }
  EXPECT_GE(round_trips, 200u);
}

TEST(Tokenizer, Gemma3Rules) {
  if (!have_gemma3()) return;
  const Tokenizer* tok = tokenizer_for(kGemma3);
  if (tok == nullptr) return;
  EXPECT_EQ(tok->kind(), TokenizerKind::kSpm);
  EXPECT_EQ(tok->n_vocab(), 262144);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos_id(), 2);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_EQ(tok->pad_id(), 0);
  EXPECT_EQ(tok->unk_id(), 3);
  const int32_t eot = tok->find_token("<end_of_turn>");
  EXPECT_EQ(eot, 106);
  EXPECT_EQ(tok->eot_id(), eot);
  EXPECT_TRUE(tok->is_eog(eot));
  EXPECT_TRUE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(tok->find_token("<start_of_turn>")));
  // No space prefix: "Hello" is not "▁Hello".
  const auto hello = tok->encode("Hello", true);
  ASSERT_EQ(hello.size(), 2u);
  EXPECT_EQ(hello[0], 2);
  EXPECT_EQ(tok->token_text(hello[1]), "Hello");
  // Runs of spaces are user-defined pieces of at most 31 spaces, taken longest first.
  EXPECT_EQ(tok->encode(std::string(33, ' '), false), (std::vector<int32_t>{167, 138}));

  // Arbitrary UTF-8 round-trips unless it holds "▁" (decoded as a space, as HF does).
  std::mt19937 rng(99);
  const char* atoms[] = {" ", "\t", "\n", "a", "Z", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82",
                         "<", ">", "<end_of_turn>", "<td>", "\xC2\xA0", "1", "'", "\x01"};
  for (int iter = 0; iter < 300; ++iter) {
    std::string s;
    for (uint32_t k = rng() % 40; k > 0; --k) s += atoms[rng() % std::size(atoms)];
    for (bool special : {false, true}) {
      const auto ids = tok->encode(s, false, special);
      EXPECT_EQ(tok->decode(ids, true), s) << show(s) << " parse_special=" << special;
    }
  }
}

const Tokenizer* smollm2() { return tokenizer_for("models/SmolLM2-135M-Instruct.Q4_1.gguf"); }

TEST(Tokenizer, SmolLM2Specials) {
  const Tokenizer* tok = smollm2();
  if (tok == nullptr) return;
  EXPECT_EQ(tok->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok->pre_name(), "smollm");
  EXPECT_EQ(tok->n_vocab(), 49152);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->pad_id(), 2);
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_EQ(tok->eot_id(), 2);  // <|im_end|>, found by its text
  EXPECT_FALSE(tok->add_bos());
  EXPECT_FALSE(tok->add_eos());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->is_eog(0));  // <|endoftext|>
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(100));
  EXPECT_EQ(tok->token_type(1), TokenType::kControl);
  EXPECT_EQ(tok->find_token("<|im_start|>"), 1);
  EXPECT_EQ(tok->find_token("no such token"), -1);

  EXPECT_EQ(tok->encode("Hi", true, true, true),
            (std::vector<int32_t>{1, tok->encode("Hi", false).at(0), 2}));
  const auto ids = tok->encode("<|im_start|>user\nHi<|im_end|>", false, true);
  EXPECT_EQ(tok->decode(ids, false), "user\nHi");
  EXPECT_EQ(tok->decode(ids, true), "<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(tok->token_piece(1), "<|im_start|>");
  EXPECT_EQ(tok->token_piece(tok->find_token("\xC4\xA0")), " ");  // "Ġ" is the space byte
}

TEST(Tokenizer, OutOfRangeIds) {
  const Tokenizer* tok = smollm2();
  if (tok == nullptr) return;
  const std::vector<int32_t> bad = {5, -1};
  try {
    (void)tok->decode(bad);
    ADD_FAILURE() << "decode accepted id -1";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
  EXPECT_THROW((void)tok->token_piece(tok->n_vocab()), Error);
  EXPECT_THROW((void)tok->token_text(-7), Error);
}

std::string random_bytes(std::mt19937& rng, size_t n, bool ascii_heavy) {
  std::string s(n, '\0');
  for (auto& c : s) {
    const uint32_t r = rng();
    if (ascii_heavy && (r & 3) != 0) {
      c = " a1'\n\t<|>_\xC3\xA9"[(r >> 8) % 13];
    } else {
      c = static_cast<char>(r >> 16);
    }
  }
  return s;
}

// Arbitrary bytes: no exception, output valid, and byte-level BPE loses nothing.
TEST(Tokenizer, ArbitraryBytes) {
  std::mt19937 rng(1234);
  for (const char* rel : {"models/SmolLM2-135M-Instruct.Q4_1.gguf",
                          "models/vocab/ggml-vocab-llama-bpe.gguf",
                          "models/vocab/ggml-vocab-qwen2.gguf",
                          "models/vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tok = tokenizer_for(rel);
    if (tok == nullptr) continue;
    for (int iter = 0; iter < 300; ++iter) {
      const std::string s = random_bytes(rng, rng() % 64, iter % 2 == 0);
      for (bool special : {false, true}) {
        std::vector<int32_t> ids;
        ASSERT_NO_THROW(ids = tok->encode(s, true, special)) << rel << " " << show(s);
        for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
        const std::string text = tok->decode(ids, true);
        // decode() output is valid UTF-8 (nlohmann::json::dump throws otherwise).
        EXPECT_NO_THROW((void)nlohmann::json(text).dump()) << rel << " " << show(s);
        if (tok->kind() == TokenizerKind::kBpe && !special &&
            std::find(ids.begin(), ids.end(), tok->unk_id()) == ids.end()) {
          std::string raw;
          for (size_t k = tok->bos_id() >= 0 ? 1 : 0; k < ids.size(); ++k) {
            raw += tok->token_piece(ids[k]);
          }
          EXPECT_EQ(raw, s) << rel << ": byte-level pieces must give back the input bytes";
        }
      }
    }
  }
}

// Long runs stress the regex engine (backtracking, JIT stack) and the merge loop.
TEST(Tokenizer, LongInputs) {
  for (const char* rel : {"models/SmolLM2-135M-Instruct.Q4_1.gguf",
                          "models/vocab/ggml-vocab-llama-bpe.gguf",
                          "models/vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tok = tokenizer_for(rel);
    if (tok == nullptr) continue;
    for (const std::string& s :
         {std::string(200000, ' '), std::string(100000, 'a'), std::string(50000, '7'),
          std::string(60000, '\n') + "x", std::string(30000, '\xFF'),
          std::string(20000, ' ') + std::string(20000, '\t') + "end"}) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto ids = tok->encode(s, false, true);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_FALSE(ids.empty());
      EXPECT_LT(secs, 10.0) << rel << ": " << s.size() << " bytes took " << secs << " s";
      if (tok->kind() == TokenizerKind::kBpe && s[0] != '\xFF') {
        EXPECT_EQ(tok->decode(ids), s) << rel;
      }
    }
  }
}

TEST(Tokenizer, LlamaSpmRules) {
  const Tokenizer* tok = tokenizer_for("models/vocab/ggml-vocab-llama-spm.gguf");
  if (tok == nullptr) return;
  EXPECT_EQ(tok->kind(), TokenizerKind::kSpm);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_TRUE(tok->is_eog(2));
  const auto ids = tok->encode("Hello world", tok->add_bos(), true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(tok->decode(ids), "Hello world");
  EXPECT_EQ(tok->decode(ids, true), "<s> Hello world");
  // The leading space of the prompt is a real space in the streamed pieces.
  EXPECT_EQ(tok->token_piece(ids[1]).substr(0, 1), " ");
  // A character outside the vocabulary falls back to its bytes.
  const auto emoji = tok->encode("\xF0\x9F\xA6\x99", false, true);  // 🦙
  std::string raw;
  for (int32_t id : emoji) {
    if (tok->token_type(id) == TokenType::kByte) raw += tok->token_piece(id);
  }
  EXPECT_EQ(raw, "\xF0\x9F\xA6\x99");
  EXPECT_EQ(tok->decode(emoji), "\xF0\x9F\xA6\x99");
}

TEST(Tokenizer, Llama3Rules) {
  const Tokenizer* tok = tokenizer_for("models/vocab/ggml-vocab-llama-bpe.gguf");
  if (tok == nullptr) return;
  EXPECT_TRUE(tok->add_bos());  // llama-bpe default, the file has no add_bos_token
  EXPECT_EQ(tok->bos_id(), 128000);
  const int32_t eot = tok->find_token("<|eot_id|>");
  EXPECT_EQ(tok->eot_id(), eot);
  EXPECT_TRUE(tok->is_eog(eot));
  EXPECT_TRUE(tok->is_eog(128001));
  EXPECT_FALSE(tok->is_eog(128000));
  // Numbers split in groups of three digits.
  const auto ids = tok->encode("1234567", false, true);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(tok->token_piece(ids[0]), "123");
  EXPECT_EQ(tok->token_piece(ids[2]), "7");
}

}  // namespace
}  // namespace snapkv

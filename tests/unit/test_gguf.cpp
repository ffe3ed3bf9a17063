#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/gguf.h"
#include "support/gguf_writer.h"
#include "support/paths.h"
#include "util/memory.h"
#include "util/error.h"

namespace snapkv {
namespace {

using test::GgufWriter;

std::vector<uint8_t> sample_file(uint32_t version = 3) {
  GgufWriter w(version);
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_i32("some.negative", -5);
  w.add_f32("llama.rope.freq_base", 10000.0f);
  w.add_f64("some.double", 0.25);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_u64("some.u64", 1ull << 40);
  w.add_strings("tokenizer.ggml.tokens", {"a", "b", "", "\xE2\x96\x81x"});
  w.add_i32s("tokenizer.ggml.token_type", {1, 1, 3, 6});
  w.add_f32s("tokenizer.ggml.scores", {0.5f, -1.0f, 0.0f, 2.0f});
  std::vector<uint8_t> f32(4 * 8);
  for (int i = 0; i < 8; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(f32.data() + 4 * i, &v, 4);
  }
  w.add_tensor("a.weight", {4, 2}, 0, f32);
  w.add_tensor("b.weight", {32}, 8, std::vector<uint8_t>(34, 1));  // one Q8_0 block
  return w.bytes();
}

TEST(Gguf, ParsesEveryValueTypeAndTensors) {
  const auto bytes = sample_file();
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_uint("llama.block_count"), 2u);
  EXPECT_EQ(f->find("some.negative")->i, -5);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.rope.freq_base")), 10000.0f);
  EXPECT_DOUBLE_EQ(f->get_float("some.double"), 0.25);
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token", false));
  EXPECT_EQ(f->get_uint("some.u64"), 1ull << 40);
  const auto& toks = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(toks.size(), 4u);
  EXPECT_EQ(toks[2], "");
  EXPECT_EQ(toks[3], "\xE2\x96\x81x");
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, 1, 3, 6}));
  EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores"), (std::vector<float>{0.5f, -1.0f, 0.0f, 2.0f}));
  EXPECT_EQ(f->get_uint("missing.key", 7), 7u);

  ASSERT_EQ(f->tensors().size(), 2u);
  const GgufTensor& a = f->tensor("a.weight");
  EXPECT_EQ(a.type, GgmlType::F32);
  EXPECT_EQ(a.ne[0], 4);
  EXPECT_EQ(a.ne[1], 2);
  EXPECT_EQ(a.n_bytes, 32u);
  float v5;
  std::memcpy(&v5, a.data + 5 * 4, 4);
  EXPECT_EQ(v5, 5.0f);
  EXPECT_EQ((a.data - bytes.data()) % 32, 0);
  EXPECT_EQ(f->tensor("b.weight").n_bytes, 34u);
}

TEST(Gguf, AcceptsVersion2) {
  const auto bytes = sample_file(2);
  EXPECT_EQ(GgufFile::parse(bytes.data(), bytes.size(), "mem")->version(), 2u);
}

void expect_error(const std::vector<uint8_t>& bytes, ErrorKind kind, const std::string& needle) {
  try {
    GgufFile::parse(bytes.data(), bytes.size(), "mem");
    FAIL() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Gguf, EveryTruncationIsAReadableError) {
  const auto bytes = sample_file();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    EXPECT_THROW(GgufFile::parse(cut.data(), cut.size(), "mem"), Error) << "prefix of " << n << " bytes";
  }
}

TEST(Gguf, RejectsWrongMagicAndVersion) {
  auto bytes = sample_file();
  bytes[0] = 'X';
  expect_error(bytes, ErrorKind::kBadFile, "wrong magic");
  bytes = sample_file();
  bytes[4] = 1;
  expect_error(bytes, ErrorKind::kBadFile, "version 1");
  bytes[4] = 9;
  expect_error(bytes, ErrorKind::kBadFile, "version 9");
}

TEST(Gguf, RejectsAbsurdCounts) {
  auto bytes = sample_file();
  const uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data() + 8, &huge, 8);
  expect_error(bytes, ErrorKind::kBadFile, "absurd tensor count");
  bytes = sample_file();
  std::memcpy(bytes.data() + 16, &huge, 8);
  expect_error(bytes, ErrorKind::kBadFile, "absurd metadata count");
}

TEST(Gguf, RejectsHugeStringAndArrayLengths) {
  GgufWriter w;
  w.add_string("k", "abc");
  auto bytes = w.bytes();
  // The value's length field follows magic, version, counts (24 bytes), key (8 + 1), type (4).
  const uint64_t huge = ~0ull;
  std::memcpy(bytes.data() + 24 + 9 + 4, &huge, 8);
  expect_error(bytes, ErrorKind::kBadFile, "truncated");

  GgufWriter a;
  a.add_i32s("k", {1, 2, 3});
  bytes = a.bytes();
  std::memcpy(bytes.data() + 24 + 9 + 4 + 4, &huge, 8);
  expect_error(bytes, ErrorKind::kBadFile, "does not fit");
}

TEST(Gguf, RejectsTensorProblemsNamingTheTensor) {
  {
    GgufWriter w;
    w.add_tensor("weird.weight", {32}, 99, std::vector<uint8_t>(64));
    expect_error(w.bytes(), ErrorKind::kUnsupported, "weird.weight");
  }
  {
    GgufWriter w;
    w.add_tensor("odd.weight", {33}, 8, std::vector<uint8_t>(68));  // Q8_0 rows need 32k elements
    expect_error(w.bytes(), ErrorKind::kBadFile, "odd.weight");
  }
  {
    GgufWriter w;
    w.add_tensor("big.weight", {1024, 1024}, 0, std::vector<uint8_t>(64));  // 4 MiB claimed
    expect_error(w.bytes(), ErrorKind::kBadFile, "big.weight");
  }
  {
    GgufWriter w;
    w.add_tensor("dims.weight", {1, 1, 1, 1, 1}, 0, std::vector<uint8_t>(4));
    expect_error(w.bytes(), ErrorKind::kBadFile, "dims.weight");
  }
  {
    GgufWriter w;
    w.add_tensor("same", {1}, 0, std::vector<uint8_t>(4));
    w.add_tensor("same", {1}, 0, std::vector<uint8_t>(4));
    expect_error(w.bytes(), ErrorKind::kBadFile, "duplicate tensor name 'same'");
  }
}

TEST(Gguf, RejectsDuplicateKeysAndBadAlignment) {
  {
    GgufWriter w;
    w.add_u32("k", 1);
    w.add_u32("k", 2);
    expect_error(w.bytes(), ErrorKind::kBadFile, "duplicate metadata key 'k'");
  }
  {
    GgufWriter w;
    w.add_u32("general.alignment", 24);
    expect_error(w.bytes(), ErrorKind::kBadFile, "general.alignment");
  }
}

TEST(Gguf, TypedGettersNameTheKey) {
  const auto bytes = sample_file();
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mem");
  try {
    f->get_uint("general.architecture");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'general.architecture' is string"), std::string::npos) << e.what();
  }
  try {
    f->get_uint("some.negative");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f->get_string("nope"), Error);
  EXPECT_THROW(f->tensor("nope.weight"), Error);
}

// release takes a mapped file's pages out of this process's memory (its resident size falls by
// about their size), not its bytes (read again, they are the same); a file read into memory keeps
// its pages; bytes outside the file are refused.
TEST(Gguf, ReleaseDropsTheMappedPagesButNotTheBytes) {
  for (GgufFile::Memory memory : {GgufFile::Memory::kMapped, GgufFile::Memory::kHugePages}) {
    const auto f = GgufFile::open(test::default_model_path(), memory);
    const GgufTensor& t = f->tensor("token_embd.weight");
    const std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);  // every page in memory
    const double before = static_cast<double>(current_rss_bytes());
    f->release(t.data, t.n_bytes);
    const double dropped = before - static_cast<double>(current_rss_bytes());
    if (memory == GgufFile::Memory::kMapped) {
      EXPECT_GT(dropped, 0.9 * static_cast<double>(t.n_bytes));
    } else {
      EXPECT_LT(dropped, 0.1 * static_cast<double>(t.n_bytes));
    }
    EXPECT_EQ(std::memcmp(bytes.data(), t.data, t.n_bytes), 0);
    EXPECT_THROW(f->release(t.data, f->file_size()), Error);
  }
}

TEST(Gguf, OpenReportsMissingFile) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFile);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace snapkv

// Context files on the default model (snapkv/context.h): a whole cache saved and pressed when the
// question comes keeps the entries, and answers the words, of one prefill of document and question;
// several sessions loaded from one read hold the same; a pressed cache saved and loaded answers as
// the session that pressed it (question-agnostic); a file made with another model or tokenizer, or
// asked for a press it cannot take, is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/impl.h"
#include "reference_model.h"
#include "snapkv/context.h"
#include "snapkv/error.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

ModelOptions threads2() {
  ModelOptions o;
  o.threads = 2;
  return o;
}

const Model& model() {
  static const Model m = Model::load(test::default_model_path(), threads2());
  return m;
}

std::vector<int32_t> essay(size_t n) {
  std::vector<int32_t> ids = test::load_fixture("logits_transformers.json")["input_ids"].get<std::vector<int32_t>>();
  ids.resize(std::min(n, ids.size()));
  return ids;
}

std::vector<int32_t> question() {
  return model().tokenizer().encode("\n\nWhat is the author's main point? Answer in one sentence.", false, false);
}

SessionOptions opts(int n_ctx, PressConfig press = {}, KvType type = KvType::kF16) {
  SessionOptions o;
  o.n_ctx = n_ctx;
  o.kv_type = type;
  o.press = std::move(press);
  return o;
}

PressConfig snapkv_press(int capacity) {
  PressConfig p;
  p.press = "snapkv";
  p.capacity = capacity;
  return p;
}

std::vector<int32_t> greedy(Session& s, std::span<const int32_t> prompt, bool compress = true) {
  GenerateParams gp;
  gp.max_tokens = 24;
  gp.compress_prompt = compress;
  std::vector<int32_t> out;
  generate(s, prompt, gp, [&](int32_t id, std::string_view) {
    out.push_back(id);
    return true;
  });
  return out;
}

std::vector<std::vector<int32_t>> positions(const Session& s) {
  std::vector<std::vector<int32_t>> out;
  const KvCache& kv = s.impl().seq.kv();
  for (int il = 0; il < kv.n_layer(); ++il) {
    for (const KvHeadView& h : kv.layer(il)) out.emplace_back(h.pos, h.pos + h.n);
  }
  return out;
}

// A file of this binary's temporary directory, which goes when the tests end.
std::string temp_path(const std::string& name) {
  static const test::TempDir dir("reuse");
  return (dir.path / name).string();
}

TEST(ContextReuse, WholeContextPressedAtTheQuestionEqualsOnePrefill) {
  const std::vector<int32_t> doc = essay(900), q = question();
  std::vector<int32_t> all = doc;
  all.insert(all.end(), q.begin(), q.end());
  Session one(model(), opts(2048, snapkv_press(256)));
  const std::vector<int32_t> expect = greedy(one, all);

  Session whole(model(), opts(2048));
  whole.prefill(doc);
  const std::string path = temp_path("whole.snapkv");
  const size_t bytes = save_context(whole, path);
  ContextInfo info;
  Session asked = load_context(model(), path, opts(2048, snapkv_press(256)), &info);
  EXPECT_FALSE(info.pressed);
  EXPECT_EQ(info.n_tokens, static_cast<int>(doc.size()));
  EXPECT_EQ(info.file_bytes, bytes);
  EXPECT_EQ(asked.tokens(), doc);
  const std::vector<int32_t> got = greedy(asked, q);
  EXPECT_EQ(positions(asked), positions(one));  // the same entries, each layer and head
  EXPECT_EQ(got, expect);
  EXPECT_EQ(asked.kv_bytes(), one.kv_bytes());
  // And without a press, the whole cache answers as a full-cache session would.
  Session full(model(), opts(2048));
  Session reused = load_context(model(), path, opts(2048));
  EXPECT_EQ(greedy(reused, q), greedy(full, all));
  // Sessions for several questions from one read of the file: each holds what one load gives.
  std::vector<Session> many = load_contexts(model(), path, 2, opts(2048, snapkv_press(256)));
  ASSERT_EQ(many.size(), 2u);
  for (Session& s : many) EXPECT_EQ(greedy(s, q), expect);
  EXPECT_THROW((void)load_contexts(model(), path, 0), Error);
}

TEST(ContextReuse, PressedContextAnswersAsTheSessionThatPressedIt) {
  const std::vector<int32_t> doc = essay(900), q = question();
  Session pressed(model(), opts(2048, snapkv_press(256), KvType::kBF16));
  pressed.prefill(doc);
  const std::string path = temp_path("pressed.snapkv");
  save_context(pressed, path);
  ContextInfo info;
  Session loaded = load_context(model(), path, opts(2048), &info);  // the file's KV type
  EXPECT_TRUE(info.pressed);
  EXPECT_EQ(info.kv_type, "bf16");
  EXPECT_EQ(loaded.kv_bytes(), pressed.kv_bytes());
  EXPECT_LT(loaded.kv_bytes(), loaded.kv_full_bytes() / 3);
  EXPECT_EQ(greedy(loaded, q), greedy(pressed, q, /*compress=*/false));
  // A pressed context is used as it is.
  try {
    (void)load_context(model(), path, opts(2048, snapkv_press(128)));
    ADD_FAILURE() << "a press on a pressed context was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("already pressed"), std::string::npos) << e.what();
  }
}

TEST(ContextReuse, PressesThatCannotTakeASavedContextAreRefused) {
  Session whole(model(), opts(1024));
  whole.prefill(essay(300));
  const std::string path = temp_path("refuse.snapkv");
  save_context(whole, path);
  PressConfig h2o = snapkv_press(128);
  h2o.press = "h2o";
  EXPECT_THROW((void)load_context(model(), path, opts(1024, h2o)), Error);
  PressConfig wide = snapkv_press(256);
  wide.window = 64;  // the file holds the last 32 queries
  try {
    (void)load_context(model(), path, opts(1024, wide));
    ADD_FAILURE() << "a window of 64 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-window 64"), std::string::npos) << e.what();
  }
  PressConfig per_head = snapkv_press(128);
  per_head.gqa = GqaReduce::kPerQueryHead;
  EXPECT_THROW((void)load_context(model(), path, opts(1024, per_head)), Error);
  EXPECT_THROW((void)load_context(model(), path, opts(300)), Error);  // no room for a question
  Session empty(model(), opts(1024));
  EXPECT_THROW(save_context(empty, temp_path("empty.snapkv")), Error);
}

// A copy of the default model with one byte changed at `offset`; still a valid model.
std::string patched_model(const std::string& name, size_t offset) {
  const std::string path = temp_path(name);
  fs::copy_file(test::default_model_path(), path, fs::copy_options::overwrite_existing);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c ^= 0x01;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  return path;
}

TEST(ContextReuse, FilesOfAnotherModelOrTokenizerAreRefusedByName) {
  Session whole(model(), opts(1024));
  whole.prefill(essay(200));
  const std::string path = temp_path("other.snapkv");
  save_context(whole, path);
  const auto gguf = GgufFile::open(test::default_model_path(), GgufFile::Memory::kMapped);
  const GgufTensor& norm = gguf->tensor("blk.3.attn_norm.weight");
  const uint8_t* base = norm.data - gguf->data_offset() - norm.offset;
  // Another fine-tune: one weight differs. Another tokenizer: one vocabulary entry differs.
  const std::string token = std::string(gguf->get_string_array("tokenizer.ggml.tokens")[5000]);
  const size_t token_at = static_cast<size_t>(gguf->get_string_array("tokenizer.ggml.tokens")[5000].data() -
                                              reinterpret_cast<const char*>(base));
  for (const auto& [file, needle] : {std::pair{patched_model("weights.gguf", gguf->data_offset() + norm.offset + 1),
                                               "another model"},
                                     std::pair{patched_model("vocab.gguf", token_at), "another tokenizer"}}) {
    const Model other = Model::load(file, threads2());
    try {
      (void)load_context(other, path);
      ADD_FAILURE() << file << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadFile);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    fs::remove(file);
  }
  EXPECT_FALSE(token.empty());
}

}  // namespace
}  // namespace snapkv

// Context files (kv/context_file.h): what is written is read back byte for byte; every truncation,
// every single-byte corruption and every other version is refused with Error(kBadFile); a write
// killed at any point leaves the old file or the new one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "kv/context_file.h"
#include "snapkv/error.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

struct Saved {
  ContextMeta meta;
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  std::vector<WindowQueries> windows;
  KvCache kv{1, 1, 1};
};

// n_tok tokens through a cache of 2 layers x 2 KV heads (head_dim 4); pressed: each head keeps
// every other entry, offset by the head (so heads differ in length and positions).
Saved make(int n_tok, bool pressed, KvType type = KvType::kF16, int seed = 1) {
  Saved s;
  const int n_layer = 2, n_head_kv = 2, d = 4, n_head = 4, n_vocab = 50;
  s.meta = {.model_fingerprint = 0x1234, .tokenizer_fingerprint = 0x5678, .model_name = "test-model",
            .kv_type = type, .n_layer = n_layer, .n_head_kv = n_head_kv, .replicate = 1, .head_dim = d,
            .n_head = n_head, .n_vocab = n_vocab, .pressed = pressed, .press = pressed ? "snapkv" : "full",
            .question_prefix = "\n\n", .question_suffix = "<|im_end|>\n", .chat = true};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  s.kv = KvCache(n_layer, n_head_kv, d, type);
  std::vector<float> k(static_cast<size_t>(n_tok) * n_head_kv * d), v(k.size());
  std::vector<int32_t> pos(n_tok);
  for (int t = 0; t < n_tok; ++t) pos[t] = t;
  for (int il = 0; il < n_layer; ++il) {
    for (float& x : k) x = u(rng);
    for (float& x : v) x = u(rng);
    s.kv.append(il, n_tok, k.data(), v.data(), pos.data());
    if (!pressed) continue;
    for (int ih = 0; ih < n_head_kv; ++ih) {
      std::vector<int32_t> idx;
      for (int t = ih; t < n_tok; t += 2) idx.push_back(t);
      s.kv.keep(il, ih, idx);
    }
  }
  for (int t = 0; t < n_tok; ++t) s.tokens.push_back(static_cast<int32_t>(rng() % n_vocab));
  for (int i = 0; i < n_vocab; ++i) s.logits.push_back(u(rng));
  if (!pressed) {
    for (int il = 0; il < n_layer; ++il) {
      WindowQueries w;
      for (int t = std::max(0, n_tok - 3); t < n_tok; ++t) w.pos.push_back(t);
      for (size_t i = 0; i < w.pos.size() * n_head * d; ++i) w.q.push_back(u(rng));
      s.windows.push_back(w);
    }
  }
  return s;
}

size_t write(const fs::path& p, const Saved& s) {
  return write_context_file(p.string(), s.meta, s.tokens, s.logits, s.windows, s.kv);
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_same_cache(const KvCache& a, const KvCache& b) {
  ASSERT_EQ(a.n_layer(), b.n_layer());
  ASSERT_EQ(a.n_head(), b.n_head());
  ASSERT_EQ(a.type(), b.type());
  for (int il = 0; il < a.n_layer(); ++il) {
    for (int ih = 0; ih < a.n_head(); ++ih) {
      const KvHeadView x = a.layer(il)[ih], y = b.layer(il)[ih];
      ASSERT_EQ(x.n, y.n);
      EXPECT_EQ(std::memcmp(x.pos, y.pos, x.n * 4), 0);
      EXPECT_EQ(std::memcmp(x.k, y.k, x.n * a.row_bytes()), 0);
      EXPECT_EQ(std::memcmp(x.v, y.v, x.n * a.row_bytes()), 0);
    }
  }
}

TEST(ContextFile, RoundTripsWholeAndPressedCaches) {
  const test::TempDir tmp("ctx_roundtrip");
  const fs::path& dir = tmp.path;
  for (const bool pressed : {false, true}) {
    for (const KvType type : {KvType::kF16, KvType::kBF16, KvType::kF32}) {
      const Saved s = make(9, pressed, type);
      const fs::path p = dir / "c.snapkv";
      const size_t bytes = write(p, s);
      EXPECT_EQ(bytes, fs::file_size(p));
      const auto f = ContextFile::open(p.string());
      EXPECT_EQ(f->meta().model_fingerprint, 0x1234u);
      EXPECT_EQ(f->meta().tokenizer_fingerprint, 0x5678u);
      EXPECT_EQ(f->meta().model_name, "test-model");
      EXPECT_EQ(f->meta().press, s.meta.press);
      EXPECT_EQ(f->meta().pressed, pressed);
      EXPECT_EQ(f->meta().question_prefix, "\n\n");
      EXPECT_EQ(f->meta().question_suffix, "<|im_end|>\n");
      EXPECT_TRUE(f->meta().chat);
      EXPECT_EQ(f->meta().kv_type, type);
      EXPECT_EQ(f->tokens(), s.tokens);
      EXPECT_EQ(f->logits(), s.logits);
      ASSERT_EQ(f->windows().size(), s.windows.size());
      for (size_t il = 0; il < s.windows.size(); ++il) {
        EXPECT_EQ(f->windows()[il].pos, s.windows[il].pos);
        EXPECT_EQ(f->windows()[il].q, s.windows[il].q);
      }
      EXPECT_EQ(f->entries(), s.kv.entries());
      expect_same_cache(f->cache(s.kv.windows()), s.kv);
    }
  }
  // No temporary file is left beside the target.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

void expect_bad(const std::vector<uint8_t>& bytes, const std::string& why) {
  try {
    (void)ContextFile::parse(bytes.data(), bytes.size(), "c.snapkv");
    ADD_FAILURE() << why << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFile) << why << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("c.snapkv"), std::string::npos) << e.what();
  }
}

TEST(ContextFile, EveryTruncationIsRefused) {
  const test::TempDir tmp("ctx_trunc");
  const fs::path& dir = tmp.path;
  for (const bool pressed : {false, true}) {
    write(dir / "c.snapkv", make(5, pressed));
    const std::vector<uint8_t> good = read_bytes(dir / "c.snapkv");
    for (size_t n = 0; n < good.size(); ++n) {
      expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)),
                 "first " + std::to_string(n) + " bytes");
    }
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    expect_bad(longer, "a byte appended");
  }
}

TEST(ContextFile, EverySingleByteCorruptionIsRefused) {
  const test::TempDir tmp("ctx_flip");
  const fs::path& dir = tmp.path;
  for (const bool pressed : {false, true}) {
    write(dir / "c.snapkv", make(5, pressed));
    const std::vector<uint8_t> good = read_bytes(dir / "c.snapkv");
    ASSERT_NO_THROW((void)ContextFile::parse(good.data(), good.size(), "c.snapkv"));
    for (size_t i = 0; i < good.size(); ++i) {
      for (const uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        std::vector<uint8_t> bad = good;
        bad[i] ^= mask;
        expect_bad(bad, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      }
    }
  }
}

TEST(ContextFile, OtherVersionsAndEmptyFilesAreRefusedByName) {
  const test::TempDir tmp("ctx_version");
  const fs::path& dir = tmp.path;
  write(dir / "c.snapkv", make(4, true));
  std::vector<uint8_t> bytes = read_bytes(dir / "c.snapkv");
  const uint32_t v2 = kContextFileVersion + 1;
  std::memcpy(bytes.data() + 8, &v2, 4);
  try {
    (void)ContextFile::parse(bytes.data(), bytes.size(), "c.snapkv");
    ADD_FAILURE() << "version 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "empty.snapkv").close();
  EXPECT_THROW((void)ContextFile::open((dir / "empty.snapkv").string()), Error);
  EXPECT_THROW((void)ContextFile::open((dir / "missing.snapkv").string()), Error);
  EXPECT_THROW((void)ContextFile::open(dir.string()), Error);  // a directory
}

TEST(ContextFile, AFailedWriteLeavesTheOldFile) {
  const test::TempDir tmp("ctx_nowrite");
  const fs::path& dir = tmp.path;
  const Saved old = make(4, true);
  write(dir / "c.snapkv", old);
  const std::vector<uint8_t> before = read_bytes(dir / "c.snapkv");
  // The directory of the target does not exist: nothing is written anywhere.
  EXPECT_THROW(write(dir / "no" / "c.snapkv", make(6, false)), Error);
  // A directory where the file should go: the rename fails, the temporary file is removed.
  fs::create_directories(dir / "d.snapkv" / "x");
  EXPECT_THROW(write(dir / "d.snapkv", make(6, false)), Error);
  EXPECT_EQ(read_bytes(dir / "c.snapkv"), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
}

// A child process rewrites the file with a bigger state and is killed at a random moment: the
// file then holds the old state or the new one, whole.
TEST(ContextFile, AWriteKilledAtAnyPointLeavesTheOldFileOrTheNew) {
  const test::TempDir tmp("ctx_kill");
  const fs::path& dir = tmp.path;
  const fs::path p = dir / "c.snapkv";
  const Saved old = make(4, true);
  const Saved next = make(40000, false, KvType::kF32, 2);  // ~5 MB: the write takes a while
  // Kill times spread over [0, 1.5 x) the time one write takes here (fsync included).
  const auto t0 = std::chrono::steady_clock::now();
  write(p, next);
  const auto took = std::chrono::steady_clock::now() - t0;
  const auto span_us = std::chrono::duration_cast<std::chrono::microseconds>(took).count() * 3 / 2 + 1;
  std::mt19937 rng(7);
  int saw_old = 0, saw_new = 0;
  for (int round = 0; round < 12; ++round) {
    write(p, old);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        write(p, next);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % span_us));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const auto f = ContextFile::open(p.string());  // must load
    if (f->tokens().size() == old.tokens.size()) {
      ++saw_old;
      EXPECT_EQ(f->tokens(), old.tokens);
    } else {
      ++saw_new;
      EXPECT_EQ(f->tokens(), next.tokens);
    }
  }
  EXPECT_EQ(saw_old + saw_new, 12);
  std::printf("killed writes: %d left the old file, %d the new one\n", saw_old, saw_new);
}

}  // namespace
}  // namespace snapkv

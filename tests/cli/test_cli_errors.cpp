// Bad input through the real snapkv binary: each case must end with exactly one "error:" line on
// stderr and a non-zero exit status, within a time limit (no crash, no hang).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/gguf_writer.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

void expect_error(const std::string& args, const std::string& needle) { test::expect_cli_error(args, needle); }

// The files go in one directory, removed when the tests end.
std::string write_temp(const std::string& name, const std::vector<uint8_t>& bytes) {
  static const test::TempDir dir("cli_errors");
  const fs::path p = dir.path / name;
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

std::vector<uint8_t> f32_bytes(size_t n, float v) {
  std::vector<uint8_t> b(n * 4);
  for (size_t i = 0; i < n; ++i) std::memcpy(&b[i * 4], &v, 4);
  return b;
}

// A structurally complete one-layer llama whose attn_q uses `q_type` (row of 256 elements).
std::vector<uint8_t> tiny_llama(const std::string& arch, uint32_t q_type, size_t q_bytes) {
  test::GgufWriter w;
  w.add_string("general.architecture", arch);
  const auto key = [&](const char* k) { return fmt::format("{}.{}", arch, k); };
  w.add_u32(key("block_count"), 1);
  w.add_u32(key("embedding_length"), 256);
  w.add_u32(key("feed_forward_length"), 256);
  w.add_u32(key("attention.head_count"), 4);
  w.add_u32(key("attention.head_count_kv"), 4);
  w.add_u32(key("context_length"), 64);
  w.add_f32(key("attention.layer_norm_rms_epsilon"), 1e-5f);
  w.add_tensor("token_embd.weight", {256, 4}, 0, f32_bytes(1024, 0.1f));
  w.add_tensor("output_norm.weight", {256}, 0, f32_bytes(256, 1.0f));
  w.add_tensor("blk.0.attn_norm.weight", {256}, 0, f32_bytes(256, 1.0f));
  w.add_tensor("blk.0.ffn_norm.weight", {256}, 0, f32_bytes(256, 1.0f));
  w.add_tensor("blk.0.attn_q.weight", {256, 256}, q_type, std::vector<uint8_t>(q_bytes, 0));
  for (const char* t : {"attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
    w.add_tensor(fmt::format("blk.0.{}.weight", t), {256, 256}, 0, f32_bytes(256 * 256, 0.01f));
  }
  return w.bytes();
}

TEST(CliErrors, MissingAndCorruptModelFiles) {
  expect_error("run -m /nonexistent/model.gguf -p hi", "/nonexistent/model.gguf");
  const std::string text = write_temp("text.gguf", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!',
                                                    '!', '!', '!', '!', '!', '!', '!', '!', '!', '!', '!'});
  expect_error("run -m " + text + " -p hi", "not a GGUF file");
  expect_error("inspect " + text, "not a GGUF file");

  // The real model cut short: its header parses, its tensors lie past the end.
  std::ifstream in(test::default_model_path(), std::ios::binary);
  std::vector<uint8_t> head(3'000'000);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const std::string cut = write_temp("cut.gguf", head);
  expect_error("run -m " + cut + " -p hi", "truncated");

  // An absurd tensor count in an otherwise valid header.
  std::vector<uint8_t> absurd(head.begin(), head.begin() + 4096);
  const uint64_t huge = 1ull << 62;
  std::memcpy(absurd.data() + 8, &huge, 8);
  expect_error("run -m " + write_temp("absurd.gguf", absurd) + " -p hi", "absurd tensor count");
  for (const auto& p : {text, cut}) fs::remove(p);
}

TEST(CliErrors, UnsupportedArchitectureAndTensorType) {
  const std::string arch = write_temp("arch.gguf", tiny_llama("mamba", 0, 256 * 256 * 4));
  expect_error("run -m " + arch + " -p hi", "architecture 'mamba'");
  // Q2_K (type 10): a known ggml type the kernels do not implement; the tensor is named.
  const std::string q2k = write_temp("q2k.gguf", tiny_llama("llama", 10, 256 * 84));
  expect_error("run -m " + q2k + " -p hi", "blk.0.attn_q.weight");
  fs::remove(arch);
  fs::remove(q2k);
}

TEST(CliErrors, PromptOverContextAndInvalidFlags) {
  const std::string model = "-m " + test::default_model_path();
  expect_error("run " + model + " --ctx 16 -p 'one two three four five six seven eight nine ten eleven twelve thirteen "
               "fourteen fifteen sixteen seventeen'", "--ctx");
  expect_error("run " + model + " --ctx 100000 -p hi", "a context of 100000 tokens exceeds the model's training context");
  expect_error("run " + model + " -p hi --top-p 2", "top_p");
  expect_error("run " + model + " -p hi -t 0", "-t");
  expect_error("run " + model + " -p hi -n -3", "generate");
  expect_error("run " + model + " -p hi --bogus", "--bogus");
  expect_error("run " + model, "-p");
  expect_error("run " + model + " -p hi -f /etc/hostname", "-p");
  expect_error("run " + model + " -f /nonexistent/prompt.txt", "/nonexistent/prompt.txt");
  expect_error("run " + model + " -p hi --temp abc", "--temp");
}

TEST(CliErrors, InvalidPressOptions) {
  const std::string run = "run -m " + test::default_model_path() + " -p hi ";
  expect_error(run + "--kv-press snap", "unknown press 'snap'");
  expect_error(run + "--kv-press snapkv --kv-capacity 32 --kv-window 32", "larger than the observation window");
  expect_error(run + "--kv-press snapkv --kv-ratio 1.5", "(0, 1)");
  expect_error(run + "--kv-press snapkv --kv-ratio -0.2", "(0, 1)");
  expect_error(run + "--kv-press snapkv --kv-kernel 4", "odd");
  expect_error(run + "--kv-press snapkv --kv-pool median", "--kv-pool");
  expect_error(run + "--kv-press snapkv --kv-gqa sum", "--kv-gqa");
  expect_error(run + "--kv-press ada_kv --kv-alpha 2", "alpha");
  expect_error(run + "--kv-press streaming_llm --kv-capacity 4 --kv-sinks 4", "sinks");
  expect_error(run + "--kv-type q8_0", "--kv-type");
  expect_error(run + "--decode-activations q4", "--decode-activations must be f32, q16 or q8");
  expect_error(run + "--kv-capacity abc", "--kv-capacity");
  expect_error(run + "--question-agnostic", "--question");
}

}  // namespace
}  // namespace snapkv

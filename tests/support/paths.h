#pragma once
// Locations of test inputs. The default model is downloaded by scripts/setup.sh; a test that
// needs it fails (never skips) when it is missing, with a message saying how to get it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace snapkv::test {

inline std::string source_dir() {
  const char* env = std::getenv("SNAPKV_SOURCE_DIR");
  return env ? env : SNAPKV_SOURCE_DIR;
}

inline std::string fixture_path(const std::string& name) { return source_dir() + "/tests/fixtures/" + name; }

inline std::string default_model_path() {
  const std::string p = source_dir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << p << " is missing: run `bash scripts/setup.sh` (it downloads the default model)";
  }
  return p;
}

// Gemma-3-270M (base, Q4_K_M): the second real model, a hybrid of sliding-window and global
// layers; scripts/setup.sh downloads it too.
inline std::string gemma3_model_path() {
  const std::string p = source_dir() + "/models/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << p << " is missing: run `bash scripts/download_model.sh gemma3` (scripts/setup.sh does)";
  }
  return p;
}

// The evaluation data: $SNAPKV_DATA, else ../shared/data next to the source tree.
inline std::string data_dir() {
  const char* env = std::getenv("SNAPKV_DATA");
  const std::string d = env ? env : source_dir() + "/../shared/data";
  EXPECT_TRUE(std::filesystem::is_directory(d + "/niah_paulgraham/PaulGrahamEssays"))
      << d << " has no Paul Graham essays: set SNAPKV_DATA to the evaluation data folder";
  return d;
}

}  // namespace snapkv::test

#pragma once
// A directory under the system's temporary directory, named after the test and the process,
// made empty at the start and removed at the end, also when the test fails.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace snapkv::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("snapkv_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace snapkv::test

#pragma once
// Runs the real snapkv binary for the CLI tests and checks the shape of its errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/paths.h"

namespace snapkv::test {

struct CliRun {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// PROGRAM ARGS (shell words) with a time limit; stdout and stderr captured.
inline CliRun run_program(const std::string& program, const std::string& args, int timeout_s) {
  const std::string base = (std::filesystem::temp_directory_path() / fmt::format("snapkv_cli_{}", ::getpid())).string();
  const std::string cmd = fmt::format("timeout {} {} {} >{}.out 2>{}.err", timeout_s, program, args, base, base);
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

// snapkv ARGS.
inline CliRun run_cli(const std::string& args, int timeout_s = 120) { return run_program(SNAPKV_BINARY, args, timeout_s); }

// The run must fail (non-zero, no timeout or crash) and end with exactly one "error:" line
// containing needle; earlier stderr lines may only be banners.
inline CliRun expect_cli_error(const std::string& args, const std::string& needle) {
  CliRun r = run_cli(args);
  EXPECT_NE(r.status, 0) << args;
  EXPECT_LT(r.status, 124) << "timed out or crashed: " << args << "\n" << r.err;
  const size_t start = r.err.rfind("error: ");
  if (start == std::string::npos) {
    ADD_FAILURE() << args << "\nstderr: " << r.err;
    return r;
  }
  const std::string line = r.err.substr(start);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "one line expected: " << line;
  EXPECT_NE(line.find(needle), std::string::npos) << "expected '" << needle << "' in: " << line;
  return r;
}

// The flags an `eval` run on the default model and the evaluation data needs.
inline std::string eval_args() { return fmt::format("-m {} --data {} -t 2", default_model_path(), data_dir()); }

}  // namespace snapkv::test

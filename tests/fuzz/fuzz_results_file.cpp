// libFuzzer target: arbitrary bytes as the results file of `snapkv eval SUITE` (gzip members, or
// plain JSON Lines as older runs wrote them), read as a resume and a report read it. Reading must
// end in results or one Error(kBadFile), never another exception or a crash; a file whose last
// member was cut short is rewritten and must then read back whole.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "eval/results_file.h"
#include "eval/suite_results.h"
#include "support/temp_dir.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;

std::string fuzz_dir() {
  static const snapkv::test::TempDir dir("fuzz_results");
  return dir.path.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snapkv;
  const fs::path path = results_path(fuzz_dir(), "niah");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const SuiteResults r = read_suite_results(fuzz_dir(), "niah", "question-last", "none");
    for (const nlohmann::json& line : r.rows) (void)suite_row(line, {"length", "depth"});
    if (read_result_lines(path).truncated) __builtin_trap();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadFile) __builtin_trap();
  }
  return 0;
}

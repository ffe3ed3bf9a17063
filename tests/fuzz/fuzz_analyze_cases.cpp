// libFuzzer target: arbitrary bytes as the JSON Lines of `snapkv analyze --prompts-file`. Parsing
// must end in cases or one Error(kBadFile) naming the file, never another exception or a crash.
#include <cstdint>
#include <string>

#include "snapkv/analyze.h"
#include "snapkv/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<snapkv::AnalyzeCase> cases = snapkv::parse_analyze_cases(text, "prompts.jsonl");
    if (cases.empty()) __builtin_trap();
    for (const snapkv::AnalyzeCase& c : cases) {
      if (c.id.empty() && text.find("\"id\"") == std::string::npos) __builtin_trap();
    }
  } catch (const snapkv::Error& e) {
    if (e.kind() != snapkv::ErrorKind::kBadFile || std::string(e.what()).rfind("prompts.jsonl", 0) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}

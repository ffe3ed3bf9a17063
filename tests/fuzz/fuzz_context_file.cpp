// libFuzzer target: arbitrary bytes through the context file reader and, when they parse, into a
// KV cache. Any outcome but success or snapkv::Error is a bug.
#include <cstddef>
#include <cstdint>

#include "kv/context_file.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snapkv;
  try {
    const auto f = ContextFile::parse(data, size, "fuzz");
    const KvCache kv = f->cache();
    (void)kv.bytes();
  } catch (const Error&) {
  }
  return 0;
}

// libFuzzer target: arbitrary bytes through the context file reader and, when they parse, into a
// KV cache; then the same bytes with every section's checksum made to match (as a file written
// by a buggy or hostile program would be), so the fuzzer reaches the parsers behind the checksums.
// Any outcome but success or snapkv::Error is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kv/context_file.h"
#include "util/error.h"

namespace {

void parse(const uint8_t* data, size_t size) {
  using namespace snapkv;
  try {
    const auto f = ContextFile::parse(data, size, "fuzz");
    const KvCache kv = f->cache({});
    (void)kv.bytes();
  } catch (const Error&) {
  }
}

// Rewrites each section header's checksum (u32 tag, u32 0, u64 size, u64 checksum) for the
// payload that follows it, from byte 16 (after the magic, version and section count).
std::vector<uint8_t> sealed(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  for (size_t at = 16; at + 24 <= b.size();) {
    uint64_t n = 0;
    std::memcpy(&n, &b[at + 8], 8);
    if (n > b.size() - at - 24) break;
    const uint64_t sum = snapkv::context_section_checksum(&b[at + 24], n);
    std::memcpy(&b[at + 16], &sum, 8);
    at += 24 + n;
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse(data, size);
  const std::vector<uint8_t> b = sealed(data, size);
  parse(b.data(), b.size());
  return 0;
}

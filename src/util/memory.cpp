#include "util/memory.h"

#include <fmt/format.h>

#include <fstream>
#include <string>

namespace snapkv {
namespace {
size_t status_field_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size())) * 1024;
  }
  return 0;
}
}  // namespace

size_t peak_rss_bytes() { return status_field_kib("VmHWM:"); }
size_t current_rss_bytes() { return status_field_kib("VmRSS:"); }

std::string format_bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (bytes >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace snapkv

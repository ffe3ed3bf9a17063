#include "util/memory.h"

#include <fmt/format.h>

#include "util/error.h"

#include <cctype>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

std::string format_bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (bytes >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

size_t parse_bytes(std::string_view text) {
  size_t i = 0;
  double value = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, digits = true) value = value * 10 + (text[i] - '0');
  if (!digits) fail(ErrorKind::kInvalidArgument, "'{}' is not a size (e.g. 2GiB, 512MiB)", text);
  std::string_view unit = text.substr(i);
  double scale = 1;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    const size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (u != std::string_view::npos) {
      scale = static_cast<double>(size_t{1} << (10 * (u + 1)));
      unit.remove_prefix(1);
      if (unit == "iB" || unit == "B") unit = {};
    } else if (unit == "B") {
      unit = {};
    }
  }
  if (!unit.empty()) fail(ErrorKind::kInvalidArgument, "'{}' is not a size (units: K, M, G, T, e.g. 2GiB)", text);
  const double bytes = value * scale;
  if (bytes > 1e18) fail(ErrorKind::kInvalidArgument, "'{}' is too large a size", text);
  return static_cast<size_t>(bytes);
}

}  // namespace snapkv

#include <cstdlib>

#include "snapkv/data_dir.h"

namespace snapkv {

std::string resolve_data_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("SNAPKV_DATA"); env != nullptr && *env != '\0') return env;
  return kDefaultDataDir;
}

}  // namespace snapkv

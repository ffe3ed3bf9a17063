#include "text_file.h"

#include <fstream>

#include "cli_error.h"

namespace snapkv::cli {

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f) fail(ErrorKind::kBadFile, "{}: writing failed", path.string());
}

}  // namespace snapkv::cli

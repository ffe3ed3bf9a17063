#include "text_file.h"

#include <fstream>
#include <sstream>

#include "cli_error.h"

namespace snapkv::cli {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kBadFile, "{}: cannot read the file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(ErrorKind::kBadFile, "{}: reading failed", path);
  return ss.str();
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f) fail(ErrorKind::kBadFile, "{}: writing failed", path.string());
}

}  // namespace snapkv::cli

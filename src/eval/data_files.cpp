#include "eval/data_files.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "util/error.h"

namespace snapkv {

namespace {

std::ifstream open(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail(ErrorKind::kBadFile, "{}: cannot read it (is the data folder right? set --data or SNAPKV_DATA)",
         path.string());
  }
  return in;
}

}  // namespace

std::string read_data_file(const std::filesystem::path& path) {
  std::ifstream in = open(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_word_list(const std::filesystem::path& path) {
  std::istringstream lines(read_data_file(path));
  std::set<std::string> words;
  for (std::string line; std::getline(lines, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) words.insert(line);
  }
  if (words.empty()) fail(ErrorKind::kBadFile, "{}: no words in the list", path.string());
  return {words.begin(), words.end()};
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in = open(path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kBadFile, "{}: not JSON ({})", path.string(), e.what());
  }
}

void for_each_jsonl(const std::filesystem::path& path,
                    const std::function<bool(const nlohmann::json& record, const std::string& where)>& each) {
  std::ifstream in = open(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", path.string(), n);
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) fail(ErrorKind::kBadFile, "{}: not JSON", where);
    if (!each(r, where)) return;
  }
}

}  // namespace snapkv

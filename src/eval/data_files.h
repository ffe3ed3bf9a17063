#pragma once
// Reading the evaluation data (the folder snapkv/data_dir.h resolves): whole files, word lists, JSON and JSON Lines.
// Every failure is one Error(kBadFile) naming the file, and the line for JSON Lines.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace snapkv {

std::string read_data_file(const std::filesystem::path& path);
// One word a line, blank lines and trailing spaces dropped, sorted and unique (as wonderwords
// reads its lists); an empty list is an error.
std::vector<std::string> read_word_list(const std::filesystem::path& path);
nlohmann::json read_json_file(const std::filesystem::path& path);
// each(record, where) for every non-empty line, where = "path:line"; stops when each returns false.
void for_each_jsonl(const std::filesystem::path& path,
                    const std::function<bool(const nlohmann::json& record, const std::string& where)>& each);

}  // namespace snapkv

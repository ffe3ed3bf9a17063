#pragma once
#include <filesystem>
#include <string>

namespace snapkv::cli {

// The whole file, or Error(kBadFile) naming it.
std::string read_text_file(const std::string& path);

// Writes text to path (replacing it), or Error(kBadFile).
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace snapkv::cli

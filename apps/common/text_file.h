#pragma once
#include <filesystem>
#include <string>

namespace snapkv::cli {

// Writes text to path (replacing it), or Error(kBadFile).
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace snapkv::cli

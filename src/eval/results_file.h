#pragma once
// The result lines of `snapkv eval SUITE` on disk: <out>/<suite>.jsonl.gz, JSON Lines compressed
// with gzip (the raw answers compress about 18x). A run appends the lines of each case as one
// gzip member (a complete stream: header, data, trailer), so the file is whole between cases and
// nothing is ever rewritten; gzip -d and zlib's gzread read concatenated members as one text.
// One member per line would keep no more (a case's lines are written together) and compress
// seven times worse, since each member starts with an empty dictionary.
#include <filesystem>
#include <string>
#include <vector>

namespace snapkv {

struct ResultLines {
  std::vector<std::string> lines;  // the complete lines, without their '\n'
  // The last member ends early (a run was stopped while writing it): `lines` holds what was
  // complete. Appending after it would make the file unreadable; rewrite it first.
  bool truncated = false;
};

// The lines of a gzip file, or of a plain text file (read as is, like gzread does; old runs wrote
// <suite>.jsonl). Nothing when the file does not exist. Error(kBadFile) naming the file when it
// cannot be read or holds corrupt compressed data.
ResultLines read_result_lines(const std::filesystem::path& path);

// Appends the lines, each ended by '\n', as one gzip member (nothing when lines is empty).
// Error(kBadFile) naming the file when it cannot be written.
void append_result_lines(const std::filesystem::path& path, const std::vector<std::string>& lines);

// Replaces the file by one member holding the lines: written beside it, then renamed over it, so
// a stop part way leaves the old file.
void write_result_lines(const std::filesystem::path& path, const std::vector<std::string>& lines);

}  // namespace snapkv

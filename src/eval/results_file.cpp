#include "eval/results_file.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <system_error>

#include "util/error.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzClose>;

// gzwrite takes an unsigned count: write a long text in pieces.
bool write_all(gzFile f, const std::string& text) {
  constexpr size_t kPiece = size_t{1} << 24;
  for (size_t at = 0; at < text.size(); at += kPiece) {
    const size_t n = std::min(kPiece, text.size() - at);
    if (gzwrite(f, text.data() + at, static_cast<unsigned>(n)) != static_cast<int>(n)) return false;
  }
  return true;
}

}  // namespace

ResultLines read_result_lines(const fs::path& path) {
  ResultLines r;
  std::error_code ec;
  if (!fs::exists(path, ec)) return r;
  GzPtr f(gzopen(path.c_str(), "rb"));
  if (!f) fail(ErrorKind::kBadFile, "{}: cannot open it", path.string());
  std::string pending;
  std::vector<char> buf(size_t{1} << 16);
  for (int n; (n = gzread(f.get(), buf.data(), static_cast<unsigned>(buf.size()))) > 0;) {
    pending.append(buf.data(), static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      r.lines.emplace_back(pending, start, nl - start);
    }
    pending.erase(0, start);
  }
  int err = Z_OK;
  const std::string msg = gzerror(f.get(), &err);
  // zlib reports a member that ends before its trailer as Z_BUF_ERROR ("unexpected end of
  // file"), after handing out everything decoded up to there.
  if (err == Z_BUF_ERROR) {
    r.truncated = true;
  } else if (err != Z_OK) {
    fail(ErrorKind::kBadFile, "{}: cannot read it ({})", path.string(), err == Z_ERRNO ? "read error" : msg);
  }
  // A last line without '\n' is whole in a plain file, cut short in a truncated member.
  if (!pending.empty() && !r.truncated) r.lines.push_back(std::move(pending));
  return r;
}

void append_result_lines(const fs::path& path, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  std::string text;
  for (const std::string& l : lines) text.append(l).push_back('\n');
  // Level 9, as gzip -9 compressed the committed results: a case's lines take milliseconds.
  gzFile f = gzopen(path.c_str(), "ab9");
  if (f == nullptr) fail(ErrorKind::kBadFile, "{}: cannot write it", path.string());
  const bool written = write_all(f, text);
  if (gzclose(f) != Z_OK || !written) fail(ErrorKind::kBadFile, "{}: writing failed", path.string());
}

void write_result_lines(const fs::path& path, const std::vector<std::string>& lines) {
  fs::path tmp = path;
  tmp += ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  if (lines.empty()) {
    fs::remove(path, ec);
    return;
  }
  append_result_lines(tmp, lines);
  fs::rename(tmp, path, ec);
  if (ec) fail(ErrorKind::kBadFile, "{}: cannot replace it ({})", path.string(), ec.message());
}

}  // namespace snapkv

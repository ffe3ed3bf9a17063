#include "io/dir_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "util/atomic_file.h"
#include "util/error.h"

namespace snapkv {
namespace fs = std::filesystem;
namespace {

// A temporary file this old belongs to a writer that died (a live one writes a state in seconds).
constexpr auto kStaleTemp = std::chrono::hours(1);

}  // namespace

DirStore::DirStore(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    fail(ErrorKind::kInvalidArgument, "context store {}: not a directory that can be created ({})", dir_,
         ec ? ec.message() : "a file is in the way");
  }
  std::lock_guard lk(mu_);
  trim();
}

std::string DirStore::path(const std::string& key) const {
  std::string name = key;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return (fs::path(dir_) / name).string();
}

std::optional<std::vector<uint8_t>> DirStore::get(const std::string& key) {
  const std::string p = path(key);
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<uint8_t> v((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  std::error_code ec;
  fs::last_write_time(p, fs::file_time_type::clock::now(), ec);  // recently used
  return v;
}

std::vector<std::optional<std::string>> DirStore::get_many(std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out;
  for (const std::string& k : keys) {
    std::optional<std::vector<uint8_t>> v = get(k);
    out.push_back(v ? std::optional<std::string>(std::string(v->begin(), v->end())) : std::nullopt);
  }
  return out;
}

void DirStore::put(const std::string& key, std::span<const uint8_t> value) {
  std::lock_guard lk(mu_);
  try {
    AtomicFile f(path(key));
    f.write(value.data(), value.size());
    f.commit();
    if (failing_) fmt::print(stderr, "context store {}: writable again\n", dir_);
    failing_ = false;
    total_ += value.size();
  } catch (const std::exception& e) {
    if (!failing_) fmt::print(stderr, "context store {}: {}; going on without saving\n", dir_, e.what());
    failing_ = true;
    return;
  }
  if (total_ > max_bytes_) trim();
}

void DirStore::trim() {
  struct File {
    fs::path path;
    fs::file_time_type used;
    uintmax_t size;
  };
  std::vector<File> files;
  uintmax_t total = 0;
  std::error_code ec;
  const fs::file_time_type now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (e.path().filename().string().find(".tmp-") != std::string::npos) {
      if (now - e.last_write_time(ec) > kStaleTemp) fs::remove(e.path(), ec);
      continue;
    }
    files.push_back({e.path(), e.last_write_time(ec), e.file_size(ec)});
    total += files.back().size;
  }
  if (total <= max_bytes_) {
    total_ = total;
    return;
  }
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.used < b.used; });
  // Down to 90 %, so that the next puts do not measure it again at once.
  for (const File& f : files) {
    if (total <= max_bytes_ - max_bytes_ / 10) break;
    fs::remove(f.path, ec);
    total -= f.size;
  }
  total_ = total;
}

}  // namespace snapkv

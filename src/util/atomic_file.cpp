#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>

#include "util/error.h"

namespace snapkv {

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  std::random_device rd;
  tmp_ = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(ErrorKind::kBadFile, "{}: cannot write the file: {}", path, std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(ErrorKind::kBadFile, "{}: write failed: {}", path_, std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail(ErrorKind::kBadFile, "{}: fsync failed: {}", path_, std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    fail(ErrorKind::kBadFile, "{}: cannot rename the finished file into place: {}", path_, std::strerror(errno));
  }
  committed_ = true;
  // The rename itself reaches the disk with the directory.
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace snapkv

#pragma once
// A file written beside its target and renamed over it once complete (fsync'ed, with its
// directory), so that a crash or a failed write leaves the old file or the new one, never a mix.
// The temporary file is removed unless commit() ran.
#include <cstddef>
#include <string>

namespace snapkv {

class AtomicFile {
 public:
  // Error(kBadFile) naming the path when the temporary file cannot be created.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void commit();
  size_t written() const { return written_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
  size_t written_ = 0;
};

}  // namespace snapkv

#pragma once
// A BlobStore in a directory: one file per key, written atomically (util/atomic_file.h); reading a
// file touches it, and files beyond the size limit go least recently used first (the directory is
// measured at the start and whenever the bytes written since say it may be over the limit, so
// several servers may share it; a killed writer's temporary file goes at the next measure after
// an hour).
#include <mutex>

#include "io/blob_store.h"

namespace snapkv {

class DirStore final : public BlobStore {
 public:
  DirStore(std::string dir, size_t max_bytes);
  std::optional<std::vector<uint8_t>> get(const std::string& key) override;
  std::vector<std::optional<std::string>> get_many(std::span<const std::string> keys) override;
  void put(const std::string& key, std::span<const uint8_t> value) override;
  std::string describe() const override { return dir_; }

 private:
  // Measures the directory; beyond max_bytes_, removes least recently used files. Removes the
  // temporary files of writers that died (over an hour old). mu_ held.
  void trim();
  std::string path(const std::string& key) const;
  std::string dir_;
  size_t max_bytes_;
  std::mutex mu_;  // trim() against concurrent puts
  size_t total_ = 0;  // bytes in the directory when last measured, plus those put since
  bool failing_ = false;
};

}  // namespace snapkv

#include "util/utf8.h"

namespace snapkv {
namespace {
// Length of the sequence a lead byte announces; 1 for ASCII and for bytes that cannot lead,
// which are passed through rather than held forever.
size_t sequence_length(unsigned char c) {
  if (c >= 0xF0 && c <= 0xF4) return 4;
  if (c >= 0xE0) return c <= 0xEF ? 3 : 1;
  if (c >= 0xC2) return 2;
  return 1;
}
}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  size_t i = 0, complete = 0;
  while (i < pending_.size()) {
    const size_t len = sequence_length(static_cast<unsigned char>(pending_[i]));
    if (i + len > pending_.size()) break;
    i += len;
    complete = i;
  }
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace snapkv

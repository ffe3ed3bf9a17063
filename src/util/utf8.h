#pragma once
// Buffers a byte stream so that only complete UTF-8 characters are emitted: a token may end in
// the middle of a multi-byte character, and a terminal or an SSE client must not see half of it.
#include <string>
#include <string_view>

namespace snapkv {

class Utf8Stream {
 public:
  // Appends bytes and returns the longest prefix of the buffer made of complete characters.
  std::string push(std::string_view bytes);
  // Whatever remains (an incomplete sequence at the end of the stream), emitted as is.
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace snapkv

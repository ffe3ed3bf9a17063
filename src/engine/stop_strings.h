#pragma once
// Stop strings over streamed text: text is released as soon as it cannot be the start of a stop
// string, so a streaming client never sees any part of one, and generation ends at the first.
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends generated text and returns what may be shown now. Once a stop string is found,
  // stopped() is true, the text before it is returned and the rest is dropped.
  std::string push(std::string_view text);
  // At the end of generation: the text held back.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace snapkv

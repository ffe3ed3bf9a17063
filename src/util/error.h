#pragma once
// One typed exception for every user-facing failure. It is thrown anywhere below apps/ and
// caught at the CLI/server boundary, which prints what() as a single line and exits non-zero.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace snapkv {

enum class ErrorKind {
  kInvalidArgument,  // bad flag, parameter or request field
  kBadFile,          // missing, truncated or corrupt input file
  kUnsupported,      // valid input that this engine does not handle (tensor type, architecture)
  kOutOfRange,       // e.g. a prompt longer than the context
  kInternal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(kind, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace snapkv

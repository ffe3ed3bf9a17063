#pragma once
// The one exception every API call throws for a user-facing failure: Error, with a kind and a
// one-line message (what went wrong, which file or field, what to do). Callers print what() and
// exit non-zero (the CLI) or answer 4xx (the server).
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

}  // namespace snapkv

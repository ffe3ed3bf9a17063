#pragma once
// fail(): throws the API's Error (snapkv/error.h) with a formatted message, for the command-line
// programs; main() prints it as one line and exits non-zero.
#include <fmt/format.h>

#include <utility>

#include "snapkv/error.h"

namespace snapkv::cli {

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(kind, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace snapkv::cli

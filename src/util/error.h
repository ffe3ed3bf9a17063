#pragma once
// fail(): throws the API's Error (snapkv/error.h) with a formatted message. Thrown anywhere below
// apps/ and caught at the CLI/server boundary, which prints what() as a single line.
#include <fmt/format.h>

#include "snapkv/error.h"

namespace snapkv {

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(kind, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace snapkv

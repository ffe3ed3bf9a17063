#pragma once
// Memory figures a program reports: the process's resident set and byte counts as text.
#include <cstddef>
#include <string>
#include <string_view>

namespace snapkv {

// Peak resident set size of this process in bytes (VmHWM), 0 where unavailable.
size_t peak_rss_bytes();
// Current resident set size in bytes (VmRSS), 0 where unavailable.
size_t current_rss_bytes();
// "1.23 GiB", "456.0 MiB", "789 B".
std::string format_bytes(double bytes);
// "2GiB", "512MiB", "64KiB", "1G", "1000000" (a number with an optional K/M/G/T unit, binary
// either way, "B" and "iB" optional) to bytes. Error(kInvalidArgument) naming what is wrong.
size_t parse_bytes(std::string_view text);

}  // namespace snapkv

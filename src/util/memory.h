#pragma once
#include <cstddef>
#include <string>

namespace snapkv {

// Peak resident set size of this process in bytes (VmHWM), 0 where unavailable.
size_t peak_rss_bytes();
// Current resident set size in bytes (VmRSS), 0 where unavailable.
size_t current_rss_bytes();
// "1.23 GiB", "456.0 MiB", "789 B".
std::string format_bytes(double bytes);

}  // namespace snapkv

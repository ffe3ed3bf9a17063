#include "eval/shared_prefixes.h"

#include <algorithm>

namespace snapkv {

std::vector<size_t> prefixes_to_keep(std::span<const size_t> keep, size_t k, size_t reused, size_t min_gap) {
  // Case m > k starts from the prefix shared by all of k..m: min(keep[k..m-1]). Down to `reused`.
  std::vector<size_t> levels;  // descending
  for (size_t m = k, lo = k < keep.size() ? keep[k] : 0; m < keep.size() && keep[m] > reused; ++m) {
    lo = std::min(lo, keep[m]);
    if (levels.empty() || lo < levels.back()) levels.push_back(lo);
  }
  std::vector<size_t> out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    if (*it >= (out.empty() ? reused : out.back()) + min_gap) out.push_back(*it);
  }
  return out;
}

}  // namespace snapkv

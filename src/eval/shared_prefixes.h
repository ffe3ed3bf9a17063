#pragma once
// Which prefixes of a case's prompt to keep recorded for the cases after it. Cases are sorted by
// their tokens, keep[k] being the tokens case k shares with case k + 1; a case starts from the
// longest kept prefix it shares (of `reused` tokens) and, while it is prefilled, keeps every
// prefix a later case will start from: keep[k], and shorter ones where keep[k + 1], keep[k + 2],
// ... fall below it (two questions on one document that share a first word, then one that does
// not). A prefix fewer than min_gap tokens above the one below it is not kept: prefilling that
// many again costs less than holding another copy of the cache.
#include <cstddef>
#include <span>
#include <vector>

namespace snapkv {

// Lengths to keep while prefilling case k, ascending, each above `reused`.
std::vector<size_t> prefixes_to_keep(std::span<const size_t> keep, size_t k, size_t reused, size_t min_gap);

}  // namespace snapkv

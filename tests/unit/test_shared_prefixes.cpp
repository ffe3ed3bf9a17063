// Which recorded prefixes the evaluation runner keeps for later cases (eval/shared_prefixes.h).
#include <gtest/gtest.h>

#include "eval/shared_prefixes.h"

namespace snapkv {
namespace {

using Lengths = std::vector<size_t>;

TEST(SharedPrefixes, KeepsEveryPrefixALaterCaseStartsFrom) {
  // Six questions on one 3,512-token document, sorted; keep[k] is what question k shares with
  // question k + 1 (3,522: both start "Question: What"; 3,513: only "Question:"); the sixth is
  // the last case.
  const Lengths keep = {3522, 3513, 3516, 3516, 3512, 0};
  // The first keeps 3,522 for the second, 3,513 for the third and 3,512 for the sixth.
  EXPECT_EQ(prefixes_to_keep(keep, 0, 0, 1), (Lengths{3512, 3513, 3522}));
  // Within 32 tokens of a kept prefix, prefilling again is cheaper than another copy.
  EXPECT_EQ(prefixes_to_keep(keep, 0, 0, 32), (Lengths{3512}));
  // The third starts from 3,513 and keeps 3,516 for the fourth and fifth.
  EXPECT_EQ(prefixes_to_keep(keep, 2, 3513, 1), (Lengths{3516}));
  // The fifth starts from 3,516 (shared with the fourth): the sixth's 3,512 is kept already.
  EXPECT_EQ(prefixes_to_keep(keep, 4, 3516, 1), Lengths{});
  // The last case, or nothing shared with the next one: nothing to keep.
  EXPECT_EQ(prefixes_to_keep(keep, 5, 0, 1), Lengths{});
  EXPECT_EQ(prefixes_to_keep(keep, 6, 0, 1), Lengths{});
  EXPECT_EQ(prefixes_to_keep(Lengths{0, 7}, 0, 0, 1), Lengths{});
}

}  // namespace
}  // namespace snapkv

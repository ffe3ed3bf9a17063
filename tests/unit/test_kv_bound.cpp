// The admission bound on a hybrid model's cache: an unpressed prefill in the model's chunks and
// then decode steps, appended to a real KvCache with global and sliding-window layers; the most
// entries it ever holds stay within kv_entries_bound, and the bound is not loose by more than a
// chunk per window layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kv/kv_bound.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace snapkv {
namespace {

TEST(KvBound, CoversWindowLayersAsTheCacheHoldsThem) {
  const std::vector<int32_t> windows = {512, 512, 0, 512, 0};
  for (const int64_t n_prompt : {int64_t{100}, int64_t{700}, int64_t{3000}}) {
    const int64_t n_generate = 300;
    KvCache kv(static_cast<int>(windows.size()), 1, 2, KvType::kF32, 1, windows);
    std::vector<float> k(2 * kPrefillChunk, 1.0f);
    std::vector<int32_t> pos(kPrefillChunk);
    int64_t most = 0;
    int32_t next = 0;
    const auto append = [&](int64_t n) {
      for (int64_t t = 0; t < n; ++t) pos[t] = next + static_cast<int32_t>(t);
      for (int il = 0; il < kv.n_layer(); ++il) kv.append(il, n, k.data(), k.data(), pos.data());
      next += static_cast<int32_t>(n);
      most = std::max(most, kv.entries());
    };
    for (int64_t done = 0; done < n_prompt; done += kPrefillChunk) append(std::min(kPrefillChunk, n_prompt - done));
    for (int64_t i = 0; i < n_generate; ++i) append(1);
    const int64_t bound = kv_entries_bound(PressConfig{}, windows, n_prompt, n_generate);
    EXPECT_LE(most, bound) << n_prompt;
    EXPECT_GE(most, bound - 3 * kPrefillChunk) << n_prompt;
    // The global layers alone, as a model without windows counts them.
    const std::vector<int32_t> global(2, 0);
    EXPECT_EQ(kv_entries_bound(PressConfig{}, global, n_prompt, n_generate), 2 * (n_prompt + n_generate));
  }
}

}  // namespace
}  // namespace snapkv

#pragma once
// Shared by the model tests that compare two caches reached by different paths (speculative
// against plain decoding, an evaluation's sequence against a session).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "ops/attention.h"

namespace snapkv::test {

// Entries of every layer and stored head: their positions, and keys and values within tol.
inline void expect_same_cache(const KvCache& a, const KvCache& b, const std::string& what) {
  ASSERT_EQ(a.n_layer(), b.n_layer());
  std::vector<float> ra(static_cast<size_t>(a.head_dim())), rb(ra.size());
  for (int il = 0; il < a.n_layer(); ++il) {
    const auto la = a.layer(il), lb = b.layer(il);
    ASSERT_EQ(la.size(), lb.size()) << what << ": layer " << il;
    for (size_t h = 0; h < la.size(); ++h) {
      ASSERT_EQ(std::vector<int32_t>(la[h].pos, la[h].pos + la[h].n), std::vector<int32_t>(lb[h].pos, lb[h].pos + lb[h].n))
          << what << ": layer " << il << " head " << h;
      for (int64_t j = 0; j < la[h].n; ++j) {
        for (const auto& [pa, pb] : {std::pair{la[h].k, lb[h].k}, std::pair{la[h].v, lb[h].v}}) {
          kv_row_to_f32(a.type(), pa, j, a.head_dim(), ra.data());
          kv_row_to_f32(b.type(), pb, j, b.head_dim(), rb.data());
          for (size_t i = 0; i < ra.size(); ++i) {
            ASSERT_NEAR(ra[i], rb[i], 2e-2f + 1e-2f * std::abs(rb[i])) << what << ": layer " << il << " head " << h;
          }
        }
      }
    }
  }
}

}  // namespace snapkv::test

// With 8-bit decode activations the model reads copies of its matrices interleaved by 8 rows
// (ops/rows8.h). From a mapped file, the file's pages of each copied matrix leave memory, so
// the model costs about the file's size in memory, not twice it; a model built afterwards from
// the same file reads those pages again from the file.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/reference_model.h"
#include "ops/matvec_q8.h"
#include "util/memory.h"
#include "util/thread_pool.h"

namespace snapkv {
namespace {

std::vector<float> prompt_logits(const Decoder& model) {
  const std::vector<int32_t> ids(test::essay_logits().ids.begin(), test::essay_logits().ids.begin() + 24);
  ThreadPool pool(2);
  Sequence s(model, static_cast<int>(ids.size()), pool, SequenceOptions{KvType::kF32, {}});
  return s.prefill_all_logits(ids);
}

TEST(Q8Memory, CopiedMatricesLeaveTheMappedFile) {
  if (q8_best_kernel() == Q8Kernel::kScalar) GTEST_SKIP() << "no copies without the SIMD q8 kernels";
  const auto file = GgufFile::open(test::default_model_path(), GgufFile::Memory::kMapped);
  const double before = static_cast<double>(current_rss_bytes());
  const auto q8 = load_decoder(*file, DecoderOptions{MatmulActivations::kQ8});
  const double grew = static_cast<double>(current_rss_bytes()) - before;
  const double weights = static_cast<double>(q8->weight_bytes());
  std::printf("q8 model from the mapped file: resident size grew by %.1f MiB (weights %.1f MiB)\n", grew / (1 << 20),
              weights / (1 << 20));
  EXPECT_GT(grew, 0.8 * weights);  // the copies
  EXPECT_LT(grew, 1.25 * weights);  // and not the file's pages besides (those would make it 2x)
  // The float model reads the file's rows, released pages included: the same logits as the
  // model from the file read into memory.
  const auto f32 = load_decoder(*file);
  const std::vector<float> got = prompt_logits(*f32), want = prompt_logits(*test::reference_model().model);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace snapkv

#include <algorithm>
#include <cmath>
#include <vector>

#include "eval/rng.h"
#include "snapkv/eval.h"
#include "util/error.h"

namespace snapkv {

MeanInterval bootstrap_mean_interval(std::span<const double> values, double level, int n_resamples, uint64_t seed) {
  if (!(level > 0 && level < 1)) fail(ErrorKind::kInvalidArgument, "the confidence level must be in (0, 1), got {}", level);
  if (n_resamples < 1) fail(ErrorKind::kInvalidArgument, "the bootstrap needs at least one resample");
  if (values.empty()) return {};
  const int64_t n = static_cast<int64_t>(values.size());
  EvalRng rng(seed);
  std::vector<double> means(static_cast<size_t>(n_resamples));
  for (double& m : means) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += values[static_cast<size_t>(rng.uniform(0, n - 1))];
    m = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  // The resampled means at the (1 - level) / 2 and (1 + level) / 2 quantiles (nearest rank).
  const auto quantile = [&](double q) {
    const double rank = std::ceil(q * n_resamples) - 1;
    return means[static_cast<size_t>(std::clamp(rank, 0.0, static_cast<double>(n_resamples - 1)))];
  };
  return {quantile((1 - level) / 2), quantile((1 + level) / 2)};
}

}  // namespace snapkv

// Scalar reference of matmul: the oracle the SIMD kernels are tested against.
#include <vector>

#include "ops/dequant.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace snapkv {

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tok, float* y) {
  check_row_shape(w.type, w.n_in, "matmul_reference");
  if (n_tok < 0 || w.n_out < 0) {
    fail(ErrorKind::kInvalidArgument, "matmul_reference: negative size (n_tok {}, n_out {})",
         n_tok, w.n_out);
  }
  std::vector<float> row(static_cast<size_t>(w.n_in));
  for (int64_t o = 0; o < w.n_out; ++o) {
    dequantize_row(w.type, w.data + static_cast<size_t>(o) * w.row_bytes, row.data(), w.n_in);
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* xt = x + t * w.n_in;
      double acc = 0.0;
      for (int64_t i = 0; i < w.n_in; ++i) acc += static_cast<double>(xt[i]) * row[i];
      y[t * w.n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace snapkv

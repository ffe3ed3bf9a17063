// The prefill GEMM of gemm_q8.h: rounding the activations, the scalar kernel, the reference, and
// the split among threads; the SIMD kernels are in gemm_q8_x86.cpp.
#include "ops/gemm_q8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/dequant.h"
#include "ops/gemm_q8_blocks.h"
#include "ops/gemm_q8_x86.h"
#include "ops/matvec_q8_x86.h"
#include "ops/row_split.h"
#include "ops/rows8.h"
#include "util/error.h"

namespace snapkv {

bool gemm_q8_supports(GgmlType type, int bits, Q8Kernel k) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return true;
    case GgmlType::Q8_0: return !(bits == 8 && k == Q8Kernel::kAvx2);
    default: return false;
  }
}

int gemm_q8_bits(MatmulActivations act, const WeightMatrix& w) {
  if (act == MatmulActivations::kF32) return 0;
  const int bits = act == MatmulActivations::kQ8 ? 8 : 16;
  const Q8Kernel k = q8_best_kernel();
  if (k == Q8Kernel::kScalar) return 0;
  return gemm_q8_supports(w.type, bits, k) ? bits : 0;
}

void gemm_q8_quantize(const float* x, int64_t n_in, int64_t n_tok, int bits, GemmQ8Activations& out, ThreadPool& pool,
                      Q8Kernel k) {
  q8_resize(out.rounded, n_in, n_tok, bits);
  const int64_t n_pad = (n_tok + kGemmPanel - 1) / kGemmPanel * kGemmPanel, nb = n_in / 32;
  const int64_t step_cols = 32 / bits, steps = n_in / step_cols;
  out.codes.resize(static_cast<size_t>(n_pad * n_in * bits / 8));
  out.d.resize(static_cast<size_t>(n_pad * nb));
  out.dsum.resize(out.d.size());
  run_split(pool, n_in * n_tok * 8, [&](int ith, int nth) {
    int64_t i0, i1;  // whole pairs of blocks, as quantize_q8_columns wants
    split_rows(n_in, 2 * kQ8Block, ith, nth, &i0, &i1);
    if (i0 >= i1) return;
    quantize_q8_columns(x, i0, i1, out.rounded, k);
    // Each panel's tokens side by side, 4 bytes of a step at a time (8 bits: plus 128 in each
    // byte); the padding tokens' codes and scales are zeros.
    const Q8Activations& r = out.rounded;
    const int64_t s0 = i0 / step_cols, s1 = i1 / step_cols;
    for (int64_t p = 0; p * kGemmPanel < n_tok; ++p) {
      const int64_t n = std::min(kGemmPanel, n_tok - p * kGemmPanel);
      const uint8_t* src[kGemmPanel];
      for (int64_t j = 0; j < n; ++j) {
        const int64_t t = p * kGemmPanel + j;
        src[j] = bits == 8 ? reinterpret_cast<const uint8_t*>(r.q.data() + t * n_in)
                           : reinterpret_cast<const uint8_t*>(r.q16.data() + t * n_in);
      }
      const uint32_t flip = bits == 8 ? 0x80808080u : 0;
      uint8_t* dst = out.codes.data() + (p * steps + s0) * kGemmPanel * 4;
      for (int64_t s = s0; s < s1; ++s) {
        for (int64_t j = 0; j < kGemmPanel; ++j, dst += 4) {
          uint32_t four = 0;
          if (j < n) {
            std::memcpy(&four, src[j] + s * 4, 4);
            four ^= flip;
          }
          std::memcpy(dst, &four, 4);
        }
      }
      for (int64_t b = i0 / 32; b < i1 / 32; ++b) {
        for (int64_t j = 0; j < kGemmPanel; ++j) {
          const auto at = static_cast<size_t>((p * nb + b) * kGemmPanel + j);
          const auto from = static_cast<size_t>(((p * kGemmPanel + j) * nb + b) * 4);
          out.d[at] = j < n ? r.d4[from] : 0.0f;
          out.dsum[at] = j < n ? r.sum4[from] * 4.0f : 0.0f;
        }
      }
    }
  });
}

namespace {

void check_shapes(const WeightMatrix& w, const Q8Activations& x, const char* what) {
  if (!gemm_q8_supports(w.type, x.bits, Q8Kernel::kScalar)) {
    fail(ErrorKind::kUnsupported, "{}: no integer GEMM for {} weights", what, ggml_type_info(w.type).name);
  }
  if (w.n_in != x.n_in) fail(ErrorKind::kInvalidArgument, "{}: n_in {} differs from the activations' {}", what, w.n_in, x.n_in);
}

// The scalar kernel: the arithmetic of gemm_q8.h's header comment, row by row.
template <GgmlType kType>
void scalar_rows(const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1) {
  constexpr int kGroup = gemm_block::group(kType);
  const int64_t nb = w.n_in / 32;
  std::vector<gemm_block::Block> blocks(static_cast<size_t>(nb));
  std::vector<uint8_t> gathered(w.rows8 ? w.row_bytes : 0);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = gguf_row(w, r, gathered.data());
    for (int64_t b = 0; b < nb; ++b) gemm_block::decode<kType>(row, b, blocks[static_cast<size_t>(b)]);
    for (int64_t t = 0; t < x.n_tok; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const gemm_block::Block& blk = blocks[static_cast<size_t>(b)];
        const int64_t tb = t * nb + b;
        const float d = x.d4[static_cast<size_t>(tb * 4)];
        for (int g = 0; g < 32 / kGroup; ++g) {
          int32_t sum = 0;
          for (int i = g * kGroup; i < (g + 1) * kGroup; ++i) {
            sum += blk.code[i] * (x.bits == 8 ? x.q[static_cast<size_t>(tb * 32 + i)]
                                              : x.q16[static_cast<size_t>(tb * 32 + q16_slot(i))]);
          }
          acc = std::fma(static_cast<float>(sum), blk.scale[g] * d, acc);
        }
        if constexpr (gemm_block::has_min(kType)) acc = std::fma(blk.min, x.sum4[static_cast<size_t>(tb * 4)] * 4.0f, acc);
      }
      y[t * w.n_out + r] = acc;
    }
  }
}

}  // namespace

void gemm_q8_rows(Q8Kernel k, const WeightMatrix& w, const GemmQ8Activations& x, float* y, int64_t r0, int64_t r1) {
  if (k != Q8Kernel::kScalar) return gemm_q8_x86_rows(k == Q8Kernel::kAvx512Vnni, w, x, y, r0, r1);
  gemm_block::with_type(w.type, [&](auto type) { scalar_rows<decltype(type)::value>(w, x.rounded, y, r0, r1); });
}

void gemm_q8_reference(const WeightMatrix& w, const Q8Activations& x, float* y) {
  check_shapes(w, x, "gemm_q8_reference");
  std::vector<float> row(static_cast<size_t>(w.n_in));
  const int64_t nb = w.n_in / 32;
  for (int64_t r = 0; r < w.n_out; ++r) {
    dequantize_row(w.type, w.data + static_cast<size_t>(r) * w.row_bytes, row.data(), w.n_in);
    for (int64_t t = 0; t < x.n_tok; ++t) {
      double acc = 0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        const int64_t tb = t * nb + i / 32;
        const double q = x.bits == 8 ? x.q[static_cast<size_t>(t * w.n_in + i)]
                                     : x.q16[static_cast<size_t>(tb * 32 + q16_slot(i % 32))];
        acc += static_cast<double>(row[static_cast<size_t>(i)]) * static_cast<double>(x.d4[static_cast<size_t>(tb * 4)]) * q;
      }
      y[t * w.n_out + r] = static_cast<float>(acc);
    }
  }
}

void gemm_q8_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, int bits) {
  const Q8Kernel kernel = q8_best_kernel();
  const int64_t n_in = jobs[0].w->n_in;
  // The calling thread's buffer, reused from call to call; the pool's threads read it through a
  // reference (a thread_local named in the lambda would be each thread's own).
  thread_local GemmQ8Activations buffer;
  GemmQ8Activations& xq = buffer;
  gemm_q8_quantize(x, n_in, n_tok, bits, xq, pool, kernel);
  // Row tiles claimed 64 rows at a time (ThreadPool::for_each_item), as the f32 prefill does: a
  // thread the OS holds up does not hold up the product. Each row's result does not depend on
  // which thread computes it.
  constexpr int64_t kRowsPerItem = 64;
  int64_t work = 0, n_items = 0;
  std::vector<int64_t> first_item(jobs.size() + 1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    check_shapes(*jobs[j].w, xq.rounded, "gemm_q8_many");
    work += jobs[j].w->n_out * n_in * n_tok;
    first_item[j] = n_items;
    n_items += (jobs[j].w->n_out + kRowsPerItem - 1) / kRowsPerItem;
  }
  first_item[jobs.size()] = n_items;
  const auto item = [&](int64_t i) {
    size_t j = 0;
    while (i >= first_item[j + 1]) ++j;
    const WeightMatrix& w = *jobs[j].w;
    const int64_t r0 = (i - first_item[j]) * kRowsPerItem;
    gemm_q8_rows(kernel, w, xq, jobs[j].y, r0, std::min(w.n_out, r0 + kRowsPerItem));
  };
  if (runs_inline(pool, work)) {
    for (int64_t i = 0; i < n_items; ++i) item(i);
  } else {
    pool.for_each_item(n_items, item);
  }
}

}  // namespace snapkv

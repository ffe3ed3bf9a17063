// Activations rounded to 8 bits, the kernel choice, the scalar kernel and the reference of
// matvec_q8.h; the SIMD kernels are in matvec_q8_x86.cpp (Q4_0, Q4_1, Q8_0) and matvec_qk_x86.cpp
// (the K-quants).
#include "ops/matvec_q8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/matvec_q8_block.h"
#include "ops/matvec_q8_x86.h"
#include "ops/matvec_qk_block.h"
#include "ops/matvec_qk_x86.h"
#include "ops/row_split.h"
#include "util/error.h"

namespace snapkv {
namespace {

// v in [-kMax, kMax] to the nearest integer, halves away from zero, as roundf does; roundf and
// nearbyint are library calls on baseline x86-64.
int round_to_int(float v) {
  const int i = static_cast<int>(v);  // toward zero, and v - i is exact
  const float frac = v - static_cast<float>(i);
  return i + (frac >= 0.5f) - (frac <= -0.5f);
}

// The rounding of quantize_q8, block by block, to int8 or int16 codes (these in the order of
// q16_slot); QuantizeBlocks in matvec_q8-inl.h does the same in AVX2, since as scalar code the
// rounding is a noticeable share of a q8 decode step.
template <class Code>
void quantize_blocks(const float* x, int64_t n_blocks, Code* q, float* d4, float* sum4) {
  constexpr float kMax = std::numeric_limits<Code>::max();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQ8Block;
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < kQ8Block; ++i) {
      amax = std::max(amax, std::fabs(xb[i]));
      finite = finite && std::isfinite(xb[i]);
    }
    const float d = finite ? amax / kMax : std::numeric_limits<float>::quiet_NaN();
    // Every code is 0 when d is 0 or NaN, or too small (subnormal) for 1 / d to be finite.
    const float id = d >= std::numeric_limits<float>::min() ? 1.0f / d : 0.0f;
    int32_t code_sum = 0;
    for (int i = 0; i < kQ8Block; ++i) {
      // Within [-kMax, kMax] by construction; the clamp only guards against rounding of 1 / d.
      const int c = round_to_int(id == 0.0f ? 0.0f : std::min(kMax, std::max(-kMax, xb[i] * id)));
      q[b * kQ8Block + (sizeof(Code) == 1 ? i : q16_slot(i))] = static_cast<Code>(c);
      code_sum += c;
    }
    for (int k = 0; k < 4; ++k) {
      d4[b * 4 + k] = d;
      sum4[b * 4 + k] = d * static_cast<float>(code_sum) * 0.25f;
    }
  }
}

}  // namespace

void q8_resize(Q8Activations& out, int64_t n_in, int64_t n_tok, int bits) {
  if (n_in <= 0 || n_in % kQ8Block != 0) {
    fail(ErrorKind::kInvalidArgument, "quantize_q8: n_in {} is not a positive multiple of {}", n_in, kQ8Block);
  }
  if (n_tok < 0) fail(ErrorKind::kInvalidArgument, "quantize_q8: n_tok {} is negative", n_tok);
  if (bits != 8 && bits != 16) fail(ErrorKind::kInvalidArgument, "quantize_q8: {} bits, not 8 or 16", bits);
  const int64_t n_blocks = n_tok * (n_in / kQ8Block);
  const int64_t n_pairs = n_in / (2 * kQ8Block);
  out.n_in = n_in;
  out.n_tok = n_tok;
  out.bits = bits;
  const size_t n = static_cast<size_t>(n_tok * n_in);
  out.q.resize(bits == 8 ? n : 0);
  out.q_pairs.resize(bits == 8 ? static_cast<size_t>(n_tok * n_pairs * 2 * kQ8Block) : 0);
  out.q16.resize(bits == 16 ? n : 0);
  out.d4.resize(static_cast<size_t>(n_blocks * 4));
  out.sum4.resize(static_cast<size_t>(n_blocks * 4));
}

void quantize_q8_columns(const float* x, int64_t i0, int64_t i1, Q8Activations& out, Q8Kernel kernel) {
  const int64_t n_in = out.n_in;
  if (i0 < 0 || i0 > i1 || i1 > n_in || i0 % (2 * kQ8Block) != 0 || (i1 % (2 * kQ8Block) != 0 && i1 != n_in)) {
    fail(ErrorKind::kInvalidArgument, "quantize_q8_columns: columns [{}, {}) of {} do not start and end at pairs of blocks",
         i0, i1, n_in);
  }
  const int64_t nb = n_in / kQ8Block, n_pairs = n_in / (2 * kQ8Block);
  for (int64_t t = 0; t < out.n_tok; ++t) {
    const int64_t b0 = t * nb + i0 / kQ8Block, n_blocks = (i1 - i0) / kQ8Block;
    const float* xt = x + t * n_in + i0;
    float* d4 = out.d4.data() + b0 * 4;
    float* sum4 = out.sum4.data() + b0 * 4;
    const auto round = [&](auto* q) {
      if (kernel == Q8Kernel::kScalar) quantize_blocks(xt, n_blocks, q, d4, sum4);
      else q8_x86_quantize(xt, n_blocks, q, d4, sum4);
    };
    if (out.bits == 16) {
      round(out.q16.data() + t * n_in + i0);
      continue;
    }
    round(out.q.data() + t * n_in + i0);
    for (int64_t p = i0 / (2 * kQ8Block); p < i1 / (2 * kQ8Block); ++p) {
      const int8_t* a = out.q.data() + t * n_in + p * 2 * kQ8Block;
      int8_t* dst = out.q_pairs.data() + (t * n_pairs + p) * 2 * kQ8Block;
      for (int h = 0; h < 2; ++h) {  // low then high halves of A and B
        std::memcpy(dst + h * 32, a + h * 16, 16);
        std::memcpy(dst + h * 32 + 16, a + kQ8Block + h * 16, 16);
      }
    }
  }
}

void quantize_q8(const float* x, int64_t n_in, int64_t n_tok, Q8Activations& out, Q8Kernel kernel, int bits) {
  q8_resize(out, n_in, n_tok, bits);
  quantize_q8_columns(x, 0, n_in, out, kernel);
}

bool q8_supports(GgmlType type) {
  return type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q8_0 || qk_block::is_kquant(type);
}

const char* q8_kernel_name(Q8Kernel k) {
  switch (k) {
    case Q8Kernel::kAvx2: return "AVX2";
    case Q8Kernel::kAvx512Vnni: return "AVX-512 VNNI";
    default: return "scalar";
  }
}

Q8Kernel q8_best_kernel() {
  return q8_x86_has_vnni() ? Q8Kernel::kAvx512Vnni : q8_x86_has_avx2() ? Q8Kernel::kAvx2 : Q8Kernel::kScalar;
}

std::vector<Q8Kernel> q8_kernels_supported() {
  std::vector<Q8Kernel> ks{Q8Kernel::kScalar};
  if (q8_x86_has_avx2()) ks.push_back(Q8Kernel::kAvx2);
  if (q8_x86_has_vnni()) ks.push_back(Q8Kernel::kAvx512Vnni);
  return ks;
}

namespace {

void check_shapes(const WeightMatrix& w, const Q8Activations& x, const char* what) {
  if (!q8_supports(w.type)) {
    fail(ErrorKind::kUnsupported, "{}: no 8-bit-activation kernel for {} weights", what, ggml_type_info(w.type).name);
  }
  if (w.n_in != x.n_in) fail(ErrorKind::kInvalidArgument, "{}: n_in {} differs from the activations' {}", what, w.n_in, x.n_in);
}

// The dot product of weight row r with token t's rounded activations, in T (float or double).
template <class T>
T row_dot(const WeightMatrix& w, const Q8Activations& x, int64_t r, int64_t t) {
  if (qk_block::is_kquant(w.type)) {
    const uint8_t* row = w.data + static_cast<size_t>(r) * w.row_bytes;
    const int64_t bytes = ggml_type_info(w.type).block_bytes;
    T sum = 0;
    for (int64_t sb = 0; sb < w.n_in / qk_block::kSuper; ++sb) sum += qk_block::dot<T>(w.type, row + sb * bytes, x, t, sb);
    return sum;
  }
  const int64_t nb = w.n_in / kQ8Block;
  const int64_t bytes = q8_block::bytes(w.type);
  const uint8_t* row = w.data + static_cast<size_t>(r) * w.row_bytes;
  T sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * bytes;
    const int64_t tb = t * nb + b;
    const int32_t dot = q8_block::dot(w.type, blk, x, tb);
    sum += static_cast<T>(q8_block::scale(blk)) * static_cast<T>(x.d4[static_cast<size_t>(tb * 4)]) * static_cast<T>(dot) +
           static_cast<T>(q8_block::offset(w.type, blk)) * 4 * static_cast<T>(x.sum4[static_cast<size_t>(tb * 4)]);
  }
  return sum;
}

}  // namespace

void q8_matvec_rows(Q8Kernel k, const WeightMatrix& w, const Q8Activations& x, float* y, int64_t r0, int64_t r1) {
  const bool kquant = qk_block::is_kquant(w.type);
  if (k == Q8Kernel::kScalar || ((x.bits == 16 || kquant) && !w.rows8)) {
    for (int64_t t = 0; t < x.n_tok; ++t) {
      for (int64_t r = r0; r < r1; ++r) y[t * w.n_out + r] = row_dot<float>(w, x, r, t);
    }
    return;
  }
  if (w.rows8 && (r0 % 8 != 0 || r1 % 8 != 0)) {
    fail(ErrorKind::kInvalidArgument, "q8_matvec_rows: rows [{}, {}) of a matrix interleaved by 8 rows", r0, r1);
  }
  if (kquant) {
    qk_x86_rows(k == Q8Kernel::kAvx512Vnni, w, x, y, r0, r1);
  } else {
    q8_x86_rows(k == Q8Kernel::kAvx512Vnni, w, x, y, r0, r1);
  }
}

void q8_matvec_reference(const WeightMatrix& w, const Q8Activations& x, float* y) {
  check_shapes(w, x, "q8_matvec_reference");
  for (int64_t t = 0; t < x.n_tok; ++t) {
    for (int64_t r = 0; r < w.n_out; ++r) y[t * w.n_out + r] = static_cast<float>(row_dot<double>(w, x, r, t));
  }
}

void matvec_q8_many(std::span<const MatmulJob> jobs, const Q8Activations& x, ThreadPool& pool) {
  const Q8Kernel kernel = q8_best_kernel();
  int64_t work = 0;
  for (const MatmulJob& j : jobs) {
    check_shapes(*j.w, x, "matvec_q8_many");
    work += j.w->n_out * j.w->n_in * x.n_tok;
  }
  run_split(pool, work, [&](int ith, int nth) {
    for (const MatmulJob& j : jobs) {
      int64_t r0, r1;
      split_rows(j.w->n_out, 8, ith, nth, &r0, &r1);
      q8_matvec_rows(kernel, *j.w, x, j.y, r0, r1);
    }
  });
}

void matvec_q8_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, int bits) {
  // The calling thread's buffer, reused from call to call; the pool's threads read it through a
  // reference (a thread_local named in the lambda would be each thread's own).
  thread_local Q8Activations buffer;
  quantize_q8(x, jobs[0].w->n_in, n_tok, buffer, q8_best_kernel(), bits);
  matvec_q8_many(jobs, buffer, pool);
}

}  // namespace snapkv

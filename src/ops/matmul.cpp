// Y = X W^T with W in its GGUF storage type: fused dequantize-and-dot for decode, tiled
// dequantize-then-GEMM for prefill. Compiled once per SIMD target (Highway foreach_target:
// AVX-512, AVX2, SSE4, and a plain scalar fallback); the public functions at the end dispatch to
// the best target at run time.
#include "ops/matmul.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/dequant.h"
#include "ops/gemm_q8.h"
#include "ops/matvec_q8.h"
#include "ops/row_prefetch.h"
#include "ops/row_split.h"
#include "ops/rows8.h"
#include "util/error.h"

// SSSE3-only CPUs (before 2008) fall back to the portable target; skipping it saves a compile
// pass. AVX-512 (AVX3), AVX2, SSE4 and the portable fallback (HWY_SCALAR or EMU128) are built.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/dequant-inl.h"
#include "ops/transpose-inl.h"

#ifndef SNAPKV_OPS_MATMUL_SCRATCH_
#define SNAPKV_OPS_MATMUL_SCRATCH_
namespace snapkv::matmul_detail {
// A grow-only, 64-byte aligned buffer of at least n floats, one per (thread, slot). Kept between
// calls so that prefill does not page-fault fresh allocations on every matmul.
float* scratch(int slot, size_t n);
}  // namespace snapkv::matmul_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace {

int64_t TargetT() { return HWY_TARGET; }

#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128 || HWY_HAVE_SCALABLE
// The portable fallback, for x86 CPUs without SSE4: the reference dequantizer and plain loops.
// Highway's emulated vectors would only be slower here, and they make sanitizer builds of this
// file take many minutes. Scalable-vector targets (SVE, RVV) also land here for now: the SIMD
// code below assumes that Lanes(DF) is a compile-time constant.

void MatmulOne(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  run_split(pool, w.n_out * w.n_in * n_tok, [&](int ith, int nth) {
    int64_t r0, r1;
    split_rows(w.n_out, 8, ith, nth, &r0, &r1);
    float* row = matmul_detail::scratch(0, static_cast<size_t>(w.n_in));
    std::vector<uint8_t> gathered(w.rows8 ? w.row_bytes : 0);
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(w.type, gguf_row(w, r, gathered.data()), row, w.n_in);
      for (int64_t t = 0; t < n_tok; ++t) {
        const float* xt = x + t * w.n_in;
        float acc = 0.0f;
        for (int64_t i = 0; i < w.n_in; ++i) acc += xt[i] * row[i];
        y[t * w.n_out + r] = acc;
      }
    }
  });
}

void GetRowT(const WeightMatrix& w, const uint8_t* row, float* dst) { dequantize_row(w.type, row, dst, w.n_in); }

void MatmulManyT(const MatmulJob* jobs, size_t n_jobs, const float* x, int64_t n_tok, ThreadPool& pool) {
  for (size_t j = 0; j < n_jobs; ++j) MatmulOne(*jobs[j].w, x, n_tok, jobs[j].y, pool);
}

#else  // SIMD targets

namespace hn = hwy::HWY_NAMESPACE;
using dq::DF;
using dq::kLanes;
using dq::VF;

// ---------------------------------------------------------------------------------------------
// Decode: each weight row is decoded once per pass and multiplied into the accumulators of up to
// kMatmulPassTokens tokens. Up to kMatmulDecodeMaxTokens tokens (two passes) this beats the prefill
// path, which pads tokens to blocks of 2 vectors.

// Sums w * x over one granule for T tokens. Two accumulator chains per token (four with the two
// sinks of GemvRows) hide the FMA latency; the decoders' loops are fully unrolled, so the chain
// index is a constant. The chain count is the same for every T, so that a token's sum does not
// depend on how many tokens share the pass (a speculative verification pass gives each token the
// bits one-token decode gives it).
template <int T>
struct DotSink {
  static constexpr size_t kChains = 2;
  const float* x[T];  // each token's activations at the granule start
  VF acc[T][kChains];

  HWY_INLINE void Zero() {
    for (int t = 0; t < T; ++t) {
      for (size_t c = 0; c < kChains; ++c) acc[t][c] = hn::Zero(DF());
    }
  }
  // Points the sink at element k of each token's activations (rows ldx apart).
  HWY_INLINE void At(const float* xs, int64_t ldx, int64_t k) {
    for (int t = 0; t < T; ++t) x[t] = xs + t * ldx + k;
  }
  HWY_INLINE void operator()(size_t j, VF w) {
    const size_t c = (j / kLanes) % kChains;
    HWY_UNROLL(4)
    for (int t = 0; t < T; ++t) acc[t][c] = hn::MulAdd(w, hn::LoadU(DF(), x[t] + j), acc[t][c]);
  }
  HWY_INLINE VF Sum(int t) const {
    VF sum = acc[t][0];
    for (size_t c = 1; c < kChains; ++c) sum = hn::Add(sum, acc[t][c]);
    return sum;
  }
};

// y[t * ldy + r] = dot(W[r], x[t * ldx]) for t < T and r in [r0, r1).
template <class D, int T>
HWY_NOINLINE void GemvRows(const WeightMatrix& w, const float* x, int64_t ldx, float* y,
                           int64_t ldy, int64_t r0, int64_t r1) {
  const DF df;
  const int64_t n_gran = w.n_in / D::kGranule;
  const int64_t k_tail = n_gran * D::kGranule;  // float types only: a partial last granule
  const uint8_t* first = w.data + static_cast<size_t>(r0) * w.row_bytes;
  const size_t total = static_cast<size_t>(r1 - r0) * w.row_bytes;
  PrefetchCursor ahead(first, total);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + static_cast<size_t>(r) * w.row_bytes;
    // Alternate granules go to two sinks: on AVX-512 a 32-weight granule is only two vectors,
    // and one sink's two FMA chains would wait on the multiply-add latency.
    DotSink<T> even, odd;
    even.Zero();
    odd.Zero();
    int64_t gi = 0;
    for (; gi + 2 <= n_gran; gi += 2) {
      ahead.reached(row + gi * static_cast<int64_t>(D::kBlockBytes) / D::kGranulesPerBlock);
      even.At(x, ldx, gi * D::kGranule);
      D::Decode(row, gi, even);
      odd.At(x, ldx, (gi + 1) * D::kGranule);
      D::Decode(row, gi + 1, odd);
    }
    if (gi < n_gran) {
      even.At(x, ldx, gi * D::kGranule);
      D::Decode(row, gi, even);
    }
    for (int t = 0; t < T; ++t) {
      float total = hn::GetLane(hn::SumOfLanes(df, hn::Add(even.Sum(t), odd.Sum(t))));
      if constexpr (dq::kIsFloat<D>) {
        for (int64_t k = k_tail; k < w.n_in; ++k) total += D::Scalar(row, k) * x[t * ldx + k];
      }
      y[t * ldy + r] = total;
    }
  }
}

template <class D>
void GemvAllTokens(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, int64_t r0,
                   int64_t r1) {
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMatmulPassTokens) {
    const float* xt = x + t0 * w.n_in;
    float* yt = y + t0 * w.n_out;
    switch (std::min<int64_t>(kMatmulPassTokens, n_tok - t0)) {
      case 1: GemvRows<D, 1>(w, xt, w.n_in, yt, w.n_out, r0, r1); break;
      case 2: GemvRows<D, 2>(w, xt, w.n_in, yt, w.n_out, r0, r1); break;
      case 3: GemvRows<D, 3>(w, xt, w.n_in, yt, w.n_out, r0, r1); break;
      default: GemvRows<D, 4>(w, xt, w.n_in, yt, w.n_out, r0, r1); break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Dequantize a run of a row into f32.

struct StoreSink {
  float* out;  // at the granule start
  HWY_INLINE void operator()(size_t j, VF v) { hn::StoreU(v, DF(), out + j); }
};

// out[0..kc) = W[row][k0..k0 + kc). k0 must be a multiple of the granule; kc must be too, except
// for float types at the end of the row.
template <class D>
HWY_INLINE void DequantRange(const uint8_t* row, int64_t k0, int64_t kc, float* out) {
  const int64_t g0 = k0 / D::kGranule;
  const int64_t ng = kc / D::kGranule;
  StoreSink sink;
  for (int64_t i = 0; i < ng; ++i) {
    sink.out = out + i * D::kGranule;
    D::Decode(row, g0 + i, sink);
  }
  if constexpr (dq::kIsFloat<D>) {
    for (int64_t k = ng * D::kGranule; k < kc; ++k) out[k] = D::Scalar(row, k0 + k);
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill: per thread, a tile of kRowTile weight rows x kKC columns is dequantized into an
// L1-resident buffer, then a micro-kernel computes kMR rows x kNT tokens at a time from it and
// from the activations packed k-major ([token block][k][kNT]), so the weights are broadcast and
// the tokens are the vector lanes. Accumulation across K chunks goes through a small per-thread
// [rows][tokens] buffer, transposed into y at the end of the tile.

inline constexpr size_t kNT = 2 * kLanes;  // tokens per packed block: two vectors
#if HWY_TARGET <= HWY_AVX3
inline constexpr int kMR = 12;  // 24 accumulators of 32 registers
#else
inline constexpr int kMR = 6;  // 12 accumulators of 16 registers
#endif
inline constexpr int64_t kKC = 128;     // multiple of every granule (32, 64, 128)
inline constexpr int64_t kRowTile = 24; // multiple of kMR; kRowTile * kKC floats = 12 KiB
inline constexpr int64_t kTokChunk = 256;  // tokens packed at a time (bounds the packed copy)
static_assert(kRowTile % kMR == 0);

// yt[r][0..kNT) (+)= sum_k wb[r][k] * xp[k][0..kNT) for r < kMR.
HWY_INLINE void MicroKernel(const float* HWY_RESTRICT wb, const float* HWY_RESTRICT xp,
                            size_t kc, float* HWY_RESTRICT yt, size_t ldy, bool first) {
  const DF df;
  VF a0[kMR], a1[kMR];
  HWY_UNROLL(12)
  for (int r = 0; r < kMR; ++r) a0[r] = a1[r] = hn::Zero(df);
  for (size_t k = 0; k < kc; ++k) {
    const VF x0 = hn::Load(df, xp + k * kNT);
    const VF x1 = hn::Load(df, xp + k * kNT + kLanes);
    HWY_UNROLL(12)
    for (int r = 0; r < kMR; ++r) {
      const VF wv = hn::Set(df, wb[r * kKC + k]);
      a0[r] = hn::MulAdd(wv, x0, a0[r]);
      a1[r] = hn::MulAdd(wv, x1, a1[r]);
    }
  }
  HWY_UNROLL(12)
  for (int r = 0; r < kMR; ++r) {
    float* p = yt + r * ldy;
    if (first) {
      hn::Store(a0[r], df, p);
      hn::Store(a1[r], df, p + kLanes);
    } else {
      hn::Store(hn::Add(hn::Load(df, p), a0[r]), df, p);
      hn::Store(hn::Add(hn::Load(df, p + kLanes), a1[r]), df, p + kLanes);
    }
  }
}

// Packs tokens [t0, t0 + n_tb * kNT) of x into xt ([n_tb][n_in][kNT]), zero beyond n_tok;
// token blocks [tb0, tb1) only.
void PackTokens(const float* x, int64_t n_in, int64_t t0, int64_t n_tok, float* xt,
                int64_t tb0, int64_t tb1) {
  for (int64_t tb = tb0; tb < tb1; ++tb) {
    float* dst_block = xt + tb * n_in * static_cast<int64_t>(kNT);
#if HWY_TARGET <= HWY_AVX3
    for (size_t i = 0; i < kNT; i += 16) {  // 16 tokens x 16 columns at a time
      const int64_t t = t0 + tb * static_cast<int64_t>(kNT) + static_cast<int64_t>(i);
      const int rows = static_cast<int>(std::clamp<int64_t>(n_tok - t, 0, 16));
      for (int64_t k = 0; k < n_in; k += 16) {
        Transpose16x16(rows > 0 ? x + t * n_in + k : x, static_cast<size_t>(n_in), rows,
                       static_cast<int>(std::min<int64_t>(16, n_in - k)), dst_block + k * kNT + i, kNT, 16);
      }
    }
#else
    for (size_t i = 0; i < kNT; ++i) {
      const int64_t t = t0 + tb * static_cast<int64_t>(kNT) + static_cast<int64_t>(i);
      float* dst = dst_block + i;
      if (t < n_tok) {
        const float* src = x + t * n_in;
        for (int64_t k = 0; k < n_in; ++k) dst[k * kNT] = src[k];
      } else {
        for (int64_t k = 0; k < n_in; ++k) dst[k * kNT] = 0.0f;
      }
    }
#endif
  }
}

// The decoders of the types a matrix interleaved by 8 rows can have (rows8.h).
template <class D>
inline constexpr bool kRows8Type = std::is_same_v<D, dq::DecQ4_0> || std::is_same_v<D, dq::DecQ4_1> ||
                                   std::is_same_v<D, dq::DecQ8_0> || std::is_same_v<D, dq::DecQ4_K> ||
                                   std::is_same_v<D, dq::DecQ5_K> || std::is_same_v<D, dq::DecQ6_K>;

// Rows [r0, r1) for the n_chunk tokens packed in xt (n_tb blocks), writing y rows t0.. .
template <class D>
void GemmRows(const WeightMatrix& w, const float* xt, int64_t n_tb, int64_t t0,
              int64_t n_chunk, float* y, int64_t r0, int64_t r1) {
  const size_t ldy = static_cast<size_t>(n_tb) * kNT;
  float* wbuf = matmul_detail::scratch(0, kRowTile * kKC);
  float* ytile = matmul_detail::scratch(1, kRowTile * ldy);
  const int64_t x_block = w.n_in * static_cast<int64_t>(kNT);
  for (int64_t rt = r0; rt < r1; rt += kRowTile) {
    const int64_t nr = std::min(kRowTile, r1 - rt);
    const int64_t nr_pad = (nr + kMR - 1) / kMR * kMR;
    for (int64_t k0 = 0; k0 < w.n_in; k0 += kKC) {
      const int64_t kc = std::min(kKC, w.n_in - k0);
      for (int64_t r = 0; r < nr; ++r) {
        if constexpr (kRows8Type<D>) {
          if (w.rows8) {  // the row's blocks of this range (32 elements, or a K-quant's 256), gathered
            constexpr int64_t kBlock = D::kGranule * D::kGranulesPerBlock;
            uint8_t gathered[std::max(kKC / kBlock, int64_t{1}) * kRows8MaxBlockBytes];
            gather_row8(w, rt + r, k0 / kBlock, (k0 + kc + kBlock - 1) / kBlock, gathered);
            DequantRange<D>(gathered, k0 % kBlock, kc, wbuf + r * kKC);
            continue;
          }
        }
        DequantRange<D>(w.data + static_cast<size_t>(rt + r) * w.row_bytes, k0, kc, wbuf + r * kKC);
      }
      for (int64_t r = nr; r < nr_pad; ++r) std::fill_n(wbuf + r * kKC, kc, 0.0f);
      for (int64_t tb = 0; tb < n_tb; ++tb) {
        const float* xp = xt + tb * x_block + k0 * static_cast<int64_t>(kNT);
        for (int64_t rg = 0; rg < nr_pad; rg += kMR) {
          MicroKernel(wbuf + rg * kKC, xp, static_cast<size_t>(kc),
                      ytile + rg * static_cast<int64_t>(ldy) + tb * static_cast<int64_t>(kNT),
                      ldy, k0 == 0);
        }
      }
    }
#if HWY_TARGET <= HWY_AVX3
    for (int64_t t = 0; t < n_chunk; t += 16) {  // 16 rows x 16 tokens at a time
      const int tokens = static_cast<int>(std::min<int64_t>(16, n_chunk - t));
      for (int64_t r = 0; r < nr; r += 16) {
        const int rows = static_cast<int>(std::min<int64_t>(16, nr - r));
        Transpose16x16(ytile + r * static_cast<int64_t>(ldy) + t, ldy, rows, tokens,
                       y + (t0 + t) * w.n_out + rt + r, static_cast<size_t>(w.n_out), rows);
      }
    }
#else
    for (int64_t t = 0; t < n_chunk; ++t) {
      float* yrow = y + (t0 + t) * w.n_out + rt;
      for (int64_t r = 0; r < nr; ++r) yrow[r] = ytile[r * static_cast<int64_t>(ldy) + t];
    }
#endif
  }
}

// Prefill of matrices that share their input x: each chunk of tokens is packed once, and the row
// tiles of every matrix are claimed from one list, so that small matrices (K and V) share the
// threads' meetings with the large ones.
void GemmMany(const MatmulJob* jobs, size_t n_jobs, const float* x, int64_t n_tok, ThreadPool& pool) {
  const int64_t n_in = jobs[0].w->n_in;
  // Row tiles claimed a pair at a time (ThreadPool::for_each_item): a thread the OS holds up
  // does not hold up the matmul.
  const int64_t rows_per_item = 2 * kRowTile;
  int64_t work = 0, n_items = 0;
  std::vector<int64_t> first_item(n_jobs + 1);  // job j's items: [first_item[j], first_item[j + 1])
  for (size_t j = 0; j < n_jobs; ++j) {
    work += jobs[j].w->n_out * n_in * n_tok;
    first_item[j] = n_items;
    n_items += (jobs[j].w->n_out + rows_per_item - 1) / rows_per_item;
  }
  first_item[n_jobs] = n_items;
  // Tokens in chunks of about kTokChunk, each padded to whole blocks of kNT.
  const int64_t n_chunks = (n_tok + kTokChunk - 1) / kTokChunk;
  const int64_t per_chunk = (n_tok + n_chunks - 1) / n_chunks;
  const int64_t tb_per_chunk = (per_chunk + static_cast<int64_t>(kNT) - 1) / static_cast<int64_t>(kNT);
  float* xt = matmul_detail::scratch(2, static_cast<size_t>(tb_per_chunk * n_in) * kNT);
  for (int64_t t0 = 0; t0 < n_tok; t0 += tb_per_chunk * static_cast<int64_t>(kNT)) {
    const int64_t n_chunk = std::min(tb_per_chunk * static_cast<int64_t>(kNT), n_tok - t0);
    const int64_t n_tb = (n_chunk + static_cast<int64_t>(kNT) - 1) / static_cast<int64_t>(kNT);
    run_split(pool, n_tb * n_in * static_cast<int64_t>(kNT), [&](int ith, int nth) {
      PackTokens(x, n_in, t0, n_tok, xt, n_tb * ith / nth, n_tb * (ith + 1) / nth);
    });
    const auto item = [&](int64_t i) {
      size_t j = 0;
      while (i >= first_item[j + 1]) ++j;
      const WeightMatrix& w = *jobs[j].w;
      const int64_t r0 = (i - first_item[j]) * rows_per_item;
      dq::WithDecoder(w.type, [&](auto dec) HWY_ATTR {
        GemmRows<decltype(dec)>(w, xt, n_tb, t0, n_chunk, jobs[j].y, r0, std::min(w.n_out, r0 + rows_per_item));
      });
    };
    if (runs_inline(pool, work)) {
      for (int64_t i = 0; i < n_items; ++i) item(i);
    } else {
      pool.for_each_item(n_items, item);
    }
  }
}

// Decode: one pool job for all the matrices, each thread taking a contiguous share of the rows of
// every one, so matrices too small to split on their own are split too, and the threads meet
// once for all of them. (Handing out items of 32 or 128 KiB of rows one at a time instead, as
// prefill does, slows decode: a thread's rows no longer follow one another.)
void GemvMany(const MatmulJob* jobs, size_t n_jobs, const float* x, int64_t n_tok, ThreadPool& pool) {
  int64_t work = 0;
  for (size_t j = 0; j < n_jobs; ++j) work += jobs[j].w->n_out * jobs[j].w->n_in * n_tok;
  run_split(pool, work, [&](int ith, int nth) {
    for (size_t j = 0; j < n_jobs; ++j) {
      const WeightMatrix& w = *jobs[j].w;
      int64_t r0, r1;
      split_rows(w.n_out, 8, ith, nth, &r0, &r1);
      dq::WithDecoder(w.type, [&](auto dec) HWY_ATTR {
        GemvAllTokens<decltype(dec)>(w, x, n_tok, jobs[j].y, r0, r1);
      });
    }
  });
}

void MatmulManyT(const MatmulJob* jobs, size_t n_jobs, const float* x, int64_t n_tok, ThreadPool& pool) {
  if (n_tok <= kMatmulDecodeMaxTokens) return GemvMany(jobs, n_jobs, x, n_tok, pool);
  GemmMany(jobs, n_jobs, x, n_tok, pool);
}

void GetRowT(const WeightMatrix& w, const uint8_t* row, float* dst) {
  dq::WithDecoder(w.type, [&](auto dec) HWY_ATTR { DequantRange<decltype(dec)>(row, 0, w.n_in, dst); });
}

#endif  // SIMD targets

}  // namespace

}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "hwy/aligned_allocator.h"

namespace snapkv {

namespace matmul_detail {
float* scratch(int slot, size_t n) {
  struct Buffer {
    hwy::AlignedFreeUniquePtr<float[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[3];
  Buffer& b = buffers[slot];
  if (b.size < n) {
    b.data = hwy::AllocateAligned<float>(n);
    if (!b.data) fail(ErrorKind::kInternal, "matmul: out of memory for {} floats of scratch", n);
    b.size = n;
  }
  return b.data.get();
}
}  // namespace matmul_detail

HWY_EXPORT(MatmulManyT);
HWY_EXPORT(GetRowT);
HWY_EXPORT(TargetT);

namespace {
void check_matrix(const WeightMatrix& w, const char* what) {
  check_row_shape(w.type, w.n_in, what);
  if (w.n_out <= 0) fail(ErrorKind::kInvalidArgument, "{}: n_out {} is not positive", what, w.n_out);
  if (w.data == nullptr) fail(ErrorKind::kInvalidArgument, "{}: weight data is null", what);
  const size_t need = ggml_row_bytes(ggml_type_info(w.type), static_cast<uint64_t>(w.n_in));
  if (w.row_bytes < need) {
    fail(ErrorKind::kInvalidArgument, "{}: row_bytes {} is less than the {} bytes of a {} row of {}",
         what, w.row_bytes, need, ggml_type_info(w.type).name, w.n_in);
  }
}
}  // namespace

WeightMatrix make_weight_matrix(GgmlType type, const void* data, int64_t n_in, int64_t n_out) {
  WeightMatrix w;
  w.type = type;
  w.data = static_cast<const uint8_t*>(data);
  w.n_in = n_in;
  w.n_out = n_out;
  check_row_shape(type, n_in, "make_weight_matrix");
  w.row_bytes = ggml_row_bytes(ggml_type_info(type), static_cast<uint64_t>(n_in));
  check_matrix(w, "make_weight_matrix");
  return w;
}

int matmul_activation_bits(MatmulActivations act, int64_t n_tok, const WeightMatrix& w) {
  if (act == MatmulActivations::kF32 || n_tok > kMatmulDecodeMaxTokens || !q8_supports(w.type)) return 0;
  // The K-quants' SIMD kernels read the interleaved copy only.
  const bool kquant = w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K || w.type == GgmlType::Q6_K;
  if (act == MatmulActivations::kQ8 && !kquant) return 8;
  return w.rows8 ? (act == MatmulActivations::kQ8 ? 8 : 16) : 0;
}

namespace {
// Prefill with integer activations: the jobs the integer GEMM takes go to it (gemm_q8.h), the
// others to the f32 path.
void run_prefill_jobs(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, MatmulActivations act) {
  std::vector<MatmulJob> by_bits[3];  // f32, 8, 16 bits
  for (const MatmulJob& j : jobs) by_bits[gemm_q8_bits(act, *j.w) / 8].push_back(j);
  for (int b : {1, 2}) {
    if (!by_bits[b].empty()) gemm_q8_many(by_bits[b], x, n_tok, pool, 8 * b);
  }
  if (!by_bits[0].empty()) HWY_DYNAMIC_DISPATCH(MatmulManyT)(by_bits[0].data(), by_bits[0].size(), x, n_tok, pool);
}

void run_jobs(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool, MatmulActivations act) {
  if (n_tok > kMatmulDecodeMaxTokens && act != MatmulActivations::kF32) return run_prefill_jobs(jobs, x, n_tok, pool, act);
  const int bits = matmul_activation_bits(act, n_tok, *jobs[0].w);
  const bool same = std::all_of(jobs.begin(), jobs.end(),
                                [&](const MatmulJob& j) { return matmul_activation_bits(act, n_tok, *j.w) == bits; });
  if (bits != 0 && same) return matvec_q8_many(jobs, x, n_tok, pool, bits);
  HWY_DYNAMIC_DISPATCH(MatmulManyT)(jobs.data(), jobs.size(), x, n_tok, pool);
}
}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool, MatmulActivations act) {
  check_matrix(w, "matmul");
  if (n_tok < 0) fail(ErrorKind::kInvalidArgument, "matmul: n_tok {} is negative", n_tok);
  if (n_tok == 0) return;
  const MatmulJob job{&w, y};
  run_jobs({&job, 1}, x, n_tok, pool, act);
}

void matmul_many(std::span<const MatmulJob> jobs, const float* x, int64_t n_tok, ThreadPool& pool,
                 MatmulActivations act) {
  for (const MatmulJob& j : jobs) {
    check_matrix(*j.w, "matmul_many");
    if (j.w->n_in != jobs[0].w->n_in) {
      fail(ErrorKind::kInvalidArgument, "matmul_many: n_in {} differs from the first matrix's {}", j.w->n_in,
           jobs[0].w->n_in);
    }
  }
  if (n_tok < 0) fail(ErrorKind::kInvalidArgument, "matmul_many: n_tok {} is negative", n_tok);
  if (n_tok == 0 || jobs.empty()) return;
  run_jobs(jobs, x, n_tok, pool, act);
}

void get_row(const WeightMatrix& w, int64_t row, float* dst) {
  check_matrix(w, "get_row");
  if (row < 0 || row >= w.n_out) {
    fail(ErrorKind::kOutOfRange, "get_row: row {} is outside [0, {})", row, w.n_out);
  }
  std::vector<uint8_t> gathered(w.rows8 ? w.row_bytes : 0);
  HWY_DYNAMIC_DISPATCH(GetRowT)(w, gguf_row(w, row, gathered.data()), dst);
}

const char* matmul_simd_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetT)()); }

}  // namespace snapkv
#endif  // HWY_ONCE

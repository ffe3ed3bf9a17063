// Flash-style attention, compiled per SIMD target (Highway foreach_target) and dispatched at
// run time. A work item is one KV head and a tile of query tokens; its rows are the tile's
// tokens times the query heads of that KV head's group. Keys are visited in blocks of kKeyBlock
// with an online softmax (running max m, running sum l, rescaled accumulator).
//
// Scores for many rows: the key block is transposed once to KT [d][kKeyBlock], so a row's
// scores accumulate with one broadcast FMA per dimension across all keys of the block (no
// horizontal sums); on AVX-512, kRowGroup rows at a time share each loaded K and V vector. For
// few rows (decode) transposing costs more than it saves, so the scores are direct dot products,
// a group of keys at a time with one transpose-add tree for the group. Decode over a head of
// whole 4-vector chunks (AVX2, AVX-512) skips the block buffers altogether: AttendRangeInRegisters
// for up to 3 rows of a 64-wide head on AVX-512, else AttendRangeInChunks, rows in groups of 3
// (AVX2) or 4 (AVX-512).
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "ops/dequant-inl.h"
#include "ops/fp16.h"
#include "ops/transpose-inl.h"
#include "util/prefetch.h"

#ifndef SNAPKV_OPS_ATTENTION_CONSTANTS_
#define SNAPKV_OPS_ATTENTION_CONSTANTS_
namespace snapkv::attention_detail {
inline constexpr int kKeyBlock = 64;   // keys per block: K and V blocks stay in L1
inline constexpr int kTokenTile = 32;  // query tokens that share each key block (and its transpose)
inline constexpr int kFewTokens = 16;  // calls of up to this many tokens take attention_few
inline constexpr int kTransposeMinRows = 8;
// Decode's register kernels: keys per pass over K, then V: 256 (32 KiB of f16 K of a 64-wide head,
// then as much V) in place of kKeyBlock's 64: fewer blocks, so fewer rescales of the accumulators
// and fewer switches between the K and V streams, which makes decode over a long cache faster.
inline constexpr int kDecodeBlock = 256;
// Decode: how far ahead K and V are prefetched. Over a cache in memory, 4 KiB ahead does not hide
// the memory's latency as well as 8, and 16 KiB is no better than 8.
inline constexpr size_t kPrefetchBytes = 8192;
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The lowest position a query at qp sees among kv's entries (its window's start).
inline int32_t lowest_visible(const snapkv::KvHeadView& kv, int32_t qp) {
  return kv.window > 0 ? qp - (kv.window - 1) : std::numeric_limits<int32_t>::min();
}

inline float kv_scalar(snapkv::KvType type, const void* base, size_t i) {
  const auto* h = static_cast<const uint16_t*>(base);
  switch (type) {
    case snapkv::KvType::kF16: return snapkv::fp16_to_f32(h[i]);
    case snapkv::KvType::kBF16: return snapkv::bf16_to_f32(h[i]);
    case snapkv::KvType::kF32: break;
  }
  return static_cast<const float*>(base)[i];
}
}  // namespace snapkv::attention_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using namespace attention_detail;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
// Query rows that share each loaded K and V vector in prefill: 4 x (64 keys or 64 dims) of
// accumulators fill 16 of AVX-512's 32 registers; with 8 lanes or fewer the accumulators of one
// row already fill the register file.
constexpr int kRowGroup = hn::MaxLanes(DF()) >= 16 ? 4 : 1;

// Rows [j0, j0 + nb) of a stored [n, d] key or value array as f32: in place for f32 storage,
// otherwise widened into buf (nb * d floats).
const float* BlockF32(KvType type, const void* base, int64_t j0, int nb, int d, float* buf) {
  const size_t off = static_cast<size_t>(j0) * d, n = static_cast<size_t>(nb) * d;
  if (type == KvType::kF32) return static_cast<const float*>(base) + off;
  const uint8_t* src = static_cast<const uint8_t*>(base) + off * sizeof(uint16_t);
  constexpr size_t kL = dq::kLanes;
  size_t i = 0;
  if (type == KvType::kF16) {
    for (; i + kL <= n; i += kL) hn::StoreU(dq::LoadHalves(src + 2 * i), dq::DF(), buf + i);
  } else {
    for (; i + kL <= n; i += kL) hn::StoreU(dq::LoadBf16s(src + 2 * i), dq::DF(), buf + i);
  }
  for (; i < n; ++i) buf[i] = kv_scalar(type, base, off + i);
  return buf;
}

// KT [d][kKeyBlock] = transpose of the nb keys kb [nb][d], zero past nb.
void TransposeBlock(const float* kb, int nb, int d, float* kt) {
#if HWY_TARGET <= HWY_AVX3
  for (int j = 0; j < kKeyBlock; j += 16) {
    const int rows = std::clamp(nb - j, 0, 16);
    for (int i = 0; i < d; i += 16) {
      Transpose16x16(rows > 0 ? kb + static_cast<size_t>(j) * d + i : kb, d, rows, std::min(16, d - i),
                     kt + static_cast<size_t>(i) * kKeyBlock + j, kKeyBlock, 16);
    }
  }
#else
  if (nb < kKeyBlock) std::fill(kt, kt + static_cast<size_t>(d) * kKeyBlock, 0.0f);
  for (int i = 0; i < d; ++i) {
    float* row = kt + static_cast<size_t>(i) * kKeyBlock;
    for (int j = 0; j < nb; ++j) row[j] = kb[static_cast<size_t>(j) * d + i];
  }
#endif
}

float Dot(const float* a, const float* b, int d) {
  const DF df;
  const int n = static_cast<int>(hn::Lanes(df));
  VF s0 = hn::Zero(df), s1 = hn::Zero(df);
  int i = 0;
  for (; i + 2 * n <= d; i += 2 * n) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + n), hn::LoadU(df, b + i + n), s1);
  }
  for (; i + n <= d; i += n) s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  float r = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < d; ++i) r += a[i] * b[i];
  return r;
}

#if HWY_TARGET != HWY_SCALAR && HWY_HAVE_FLOAT64
// Lane-wise sums of kLanes vectors (4 or 8 lanes): lane g of the result is the sum of a[g]'s
// lanes. A transpose-add tree: interleave pairs, then 64-bit pairs, then (8 lanes) halves.
template <class D>
hn::Vec<D> SumsOfLanes(D df, const hn::Vec<D>* a) {
  using V = hn::Vec<D>;
  const hn::Repartition<double, D> dd;
  const auto pair = [&](V x, V y) { return hn::Add(hn::InterleaveLower(df, x, y), hn::InterleaveUpper(df, x, y)); };
  const auto quad = [&](V xy, V zw) {
    const auto x = hn::BitCast(dd, xy), z = hn::BitCast(dd, zw);
    return hn::Add(hn::BitCast(df, hn::InterleaveLower(dd, x, z)), hn::BitCast(df, hn::InterleaveUpper(dd, x, z)));
  };
  const V lo = quad(pair(a[0], a[1]), pair(a[2], a[3]));  // per 128-bit block
  if constexpr (hn::MaxLanes(D()) == 4) {
    return lo;
  } else {
    const V hi = quad(pair(a[4], a[5]), pair(a[6], a[7]));
    return hn::Add(hn::ConcatLowerLower(df, hi, lo), hn::ConcatUpperUpper(df, hi, lo));
  }
}
#endif

// s[j] = q . kb[j] for the nb keys kb [nb][d]: kLanes keys at a time, each key's products in one
// vector, the group's vectors summed by SumsOfLanes (one tree instead of a horizontal sum per
// key). Other lane counts, a d that is not a multiple of the lanes, and the tail: Dot.
void ScoresDirect(const float* q, const float* kb, int nb, int d, float* s) {
  int j = 0;
#if HWY_TARGET != HWY_SCALAR && HWY_HAVE_FLOAT64
  const DF df;
  constexpr int kLanes = static_cast<int>(hn::MaxLanes(DF()));
  if constexpr (kLanes == 4 || kLanes == 8) {
    if (d % kLanes == 0) {
      for (; j + kLanes <= nb; j += kLanes) {
        const float* k = kb + static_cast<size_t>(j) * d;
        VF acc[kLanes];
#pragma GCC unroll 8
        for (int g = 0; g < kLanes; ++g) acc[g] = hn::Zero(df);
        for (int i = 0; i < d; i += kLanes) {
          const VF qi = hn::LoadU(df, q + i);
#pragma GCC unroll 8
          for (int g = 0; g < kLanes; ++g) acc[g] = hn::MulAdd(qi, hn::LoadU(df, k + g * d + i), acc[g]);
        }
        hn::StoreU(SumsOfLanes(df, acc), df, s + j);
      }
    }
  }
#endif
  for (; j < nb; ++j) s[j] = Dot(q, kb + static_cast<size_t>(j) * d, d);
}

// For each of R rows u: acc[u][0..d) = acc[u] * c[u] + sum_j p[u][j] * v[j][0..d), with acc rows d
// apart and p rows kKeyBlock apart. A group of up to 8 vectors and 64 floats of each accumulator
// row (8 on AVX2, 4 on AVX-512) stays in registers across all keys of the block, one FMA chain
// per vector, so a 64-wide head is one group, and each value vector loaded serves all R rows;
// masked keys have p = 0 and cost one FMA each, which is cheaper than a branch per key.
template <int R>
void AccumulateValuesRows(float* acc, const float* c, const float* p, const float* v, int nb, int d) {
  const DF df;
  constexpr int kLanes = static_cast<int>(hn::MaxLanes(DF()));
  constexpr int kGroup = std::clamp(64 / kLanes, 1, 8);
  int i = 0;
  for (; i + kGroup * kLanes <= d; i += kGroup * kLanes) {
    VF a[R][kGroup];
#pragma GCC unroll 4
    for (int u = 0; u < R; ++u) {
      const VF vc = hn::Set(df, c[u]);
#pragma GCC unroll 8
      for (int g = 0; g < kGroup; ++g) a[u][g] = hn::Mul(hn::LoadU(df, acc + u * d + i + g * kLanes), vc);
    }
    for (int j = 0; j < nb; ++j) {
      const float* vj = v + static_cast<size_t>(j) * d + i;
      VF vv[kGroup];
#pragma GCC unroll 8
      for (int g = 0; g < kGroup; ++g) vv[g] = hn::LoadU(df, vj + g * kLanes);
#pragma GCC unroll 4
      for (int u = 0; u < R; ++u) {
        const VF pj = hn::Set(df, p[u * kKeyBlock + j]);
#pragma GCC unroll 8
        for (int g = 0; g < kGroup; ++g) a[u][g] = hn::MulAdd(pj, vv[g], a[u][g]);
      }
    }
#pragma GCC unroll 4
    for (int u = 0; u < R; ++u) {
#pragma GCC unroll 8
      for (int g = 0; g < kGroup; ++g) hn::StoreU(a[u][g], df, acc + u * d + i + g * kLanes);
    }
  }
  for (int u = 0; u < R; ++u) {
    float* au = acc + u * d;
    const float* pu = p + u * kKeyBlock;
    int k = i;
    for (; k + kLanes <= d; k += kLanes) {
      VF a0 = hn::Mul(hn::LoadU(df, au + k), hn::Set(df, c[u]));
      for (int j = 0; j < nb; ++j) a0 = hn::MulAdd(hn::Set(df, pu[j]), hn::LoadU(df, v + static_cast<size_t>(j) * d + k), a0);
      hn::StoreU(a0, df, au + k);
    }
    for (; k < d; ++k) {
      float a = au[k] * c[u];
      for (int j = 0; j < nb; ++j) a += pu[j] * v[static_cast<size_t>(j) * d + k];
      au[k] = a;
    }
  }
}

void AccumulateValues(float* acc, float c, const float* p, const float* v, int nb, int d) {
  AccumulateValuesRows<1>(acc, &c, p, v, nb, d);
}

// s[u][0..kKeyBlock) = q[u] . KT[:, j] for R query rows and every key of the block (KT
// zero-padded past nb; s rows kKeyBlock apart): each KT vector loaded serves all R rows. The trip
// count of the inner loop is a compile-time constant so the accumulators stay in registers.
template <int R>
void ScoresTransposed(const float* const* q, const float* kt, int d, float* s) {
  const DF df;
  constexpr int kLanes = static_cast<int>(hn::MaxLanes(DF()));
  constexpr int kVecs = kKeyBlock / kLanes;
  VF acc[R][kVecs];
#pragma GCC unroll 4
  for (int u = 0; u < R; ++u) {
#pragma GCC unroll 16
    for (int c = 0; c < kVecs; ++c) acc[u][c] = hn::Zero(df);
  }
  for (int i = 0; i < d; ++i) {
    const float* row = kt + static_cast<size_t>(i) * kKeyBlock;
    VF k[kVecs];
#pragma GCC unroll 16
    for (int c = 0; c < kVecs; ++c) k[c] = hn::LoadU(df, row + c * kLanes);
#pragma GCC unroll 4
    for (int u = 0; u < R; ++u) {
      const VF qi = hn::Set(df, q[u][i]);
#pragma GCC unroll 16
      for (int c = 0; c < kVecs; ++c) acc[u][c] = hn::MulAdd(qi, k[c], acc[u][c]);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < R; ++u) {
#pragma GCC unroll 16
    for (int c = 0; c < kVecs; ++c) hn::StoreU(acc[u][c], df, s + u * kKeyBlock + c * kLanes);
  }
}

// Turns raw scores into unnormalized probabilities for one row, whose visible keys are at
// positions lo .. qp, and updates its running max and sum; returns the factor by which the row's
// accumulator must be rescaled. Blocks whose keys are all visible to the row (most of them) are
// scaled and maxed with vectors; only the blocks on the causal diagonal and on a sliding window's
// edge are masked key by key.
float SoftmaxBlock(float* s, const int32_t* pos, int nb, int32_t qp, int32_t lo, float scale, float& m, float& l) {
  const DF df;
  const int n = static_cast<int>(hn::Lanes(df));
  float block_max = kNegInf;
  int j = 0;
  if (pos[nb - 1] <= qp && pos[0] >= lo) {
    const VF vs = hn::Set(df, scale);
    VF vmax = hn::Set(df, kNegInf);
    for (; j + n <= nb; j += n) {
      const VF x = hn::Mul(hn::LoadU(df, s + j), vs);
      hn::StoreU(x, df, s + j);
      vmax = hn::Max(vmax, x);
    }
    block_max = hn::GetLane(hn::MaxOfLanes(df, vmax));
  }
  for (; j < nb; ++j) {
    s[j] = pos[j] > qp || pos[j] < lo ? kNegInf : s[j] * scale;
    block_max = std::max(block_max, s[j]);
  }
  if (block_max == kNegInf) {
    for (j = 0; j < nb; ++j) s[j] = 0.0f;
    return 1.0f;
  }
  const float m_new = std::max(m, block_max);
  const float correction = m == kNegInf ? 0.0f : std::exp(m - m_new);
  const VF vm = hn::Set(df, m_new);
  VF vsum = hn::Zero(df);
  for (j = 0; j + n <= nb; j += n) {
    // exp(-inf) is 0, so masked keys drop out.
    const VF e = hn::Exp(df, hn::Sub(hn::LoadU(df, s + j), vm));
    hn::StoreU(e, df, s + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; j < nb; ++j) sum += (s[j] = std::exp(s[j] - m_new));
  l = l * correction + sum;
  m = m_new;
  return correction;
}

void AttendTileT(const float* q, const int32_t* q_pos, int64_t t0, int64_t t1, int h0, int n_group,
                 int n_head, int d, const KvHeadView& kv, float* out, float* lse) {
  const int n_rows = static_cast<int>(t1 - t0) * n_group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> acc(static_cast<size_t>(n_rows) * d, 0.0f);
  std::vector<float> m(n_rows, kNegInf), l(n_rows, 0.0f);
  const bool transpose = n_rows >= kTransposeMinRows;
  std::vector<float> kt(transpose ? static_cast<size_t>(d) * kKeyBlock : 0);
  std::vector<float> kbuf, vbuf;
  if (kv.type != KvType::kF32) kbuf.resize(static_cast<size_t>(d) * kKeyBlock), vbuf.resize(kbuf.size());
  HWY_ALIGN float s[kRowGroup * kKeyBlock];
  const auto row_q = [&](int r) { return q + ((t0 + r / n_group) * n_head + h0 + r % n_group) * d; };
  const auto row_pos = [&](int r) { return q_pos[t0 + r / n_group]; };

  // Entries are sorted by position, so keys past the tile's last query are never visible.
  const int32_t max_pos = *std::max_element(q_pos + t0, q_pos + t1);
  const int64_t n_keys = std::upper_bound(kv.pos, kv.pos + kv.n, max_pos) - kv.pos;

  for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kKeyBlock, n_keys - j0));
    const float* kb = BlockF32(kv.type, kv.k, j0, nb, d, kbuf.data());
    const float* vb = BlockF32(kv.type, kv.v, j0, nb, d, vbuf.data());
    int r = 0;
    if (transpose) {
      TransposeBlock(kb, nb, d, kt.data());
      // kRowGroup rows at a time: each K and V vector loaded serves them all.
      for (; r + kRowGroup <= n_rows; r += kRowGroup) {
        const float* qs[kRowGroup];
        float c[kRowGroup];
        for (int u = 0; u < kRowGroup; ++u) qs[u] = row_q(r + u);
        ScoresTransposed<kRowGroup>(qs, kt.data(), d, s);
        for (int u = 0; u < kRowGroup; ++u) {
          const int32_t qp = row_pos(r + u);
          c[u] = SoftmaxBlock(s + u * kKeyBlock, kv.pos + j0, nb, qp, lowest_visible(kv, qp), scale, m[r + u], l[r + u]);
        }
        AccumulateValuesRows<kRowGroup>(acc.data() + static_cast<size_t>(r) * d, c, s, vb, nb, d);
      }
    }
    for (; r < n_rows; ++r) {
      const float* qr = row_q(r);
      if (transpose) {
        ScoresTransposed<1>(&qr, kt.data(), d, s);
      } else {
        ScoresDirect(qr, kb, nb, d, s);
      }
      const float c = SoftmaxBlock(s, kv.pos + j0, nb, row_pos(r), lowest_visible(kv, row_pos(r)), scale, m[r], l[r]);
      AccumulateValues(acc.data() + static_cast<size_t>(r) * d, c, s, vb, nb, d);
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    const int64_t t = t0 + r / n_group;
    float* o = out + (t * n_head + h0 + r % n_group) * d;
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (int i = 0; i < d; ++i) o[i] = acc[static_cast<size_t>(r) * d + i] * inv;
    if (lse) lse[t * n_head + h0 + r % n_group] = l[r] > 0 ? m[r] + std::log(l[r]) : kNegInf;
  }
}

// Stored K or V elements as f32 vectors, by storage type. (kSize and SumOfLanes4 below go unused
// in the targets where no kernel reads rows in chunks: maybe_unused, for clang.)
struct KvF16 {
  [[maybe_unused]] static constexpr size_t kSize = 2;
  static VF Load(const uint8_t* p) { return dq::LoadHalves(p); }
};
struct KvBF16 {
  [[maybe_unused]] static constexpr size_t kSize = 2;
  static VF Load(const uint8_t* p) { return dq::LoadBf16s(p); }
};
struct KvF32 {
  [[maybe_unused]] static constexpr size_t kSize = 4;
  static VF Load(const uint8_t* p) { return hn::LoadU(DF(), reinterpret_cast<const float*>(p)); }
};

// Row j of a stored K or V array of G-vector rows, widened into x; prefetches the row
// kPrefetchBytes ahead into L2 (prefetcht1): prefetched into L1 (prefetcht0) instead, the two
// streams read a cache in memory more slowly, whatever the distance ahead.
template <class Kv, int G>
HWY_INLINE void LoadRow(const uint8_t* base, int j, VF* x) {
  constexpr size_t kL = hn::MaxLanes(DF()), kRow = G * kL * Kv::kSize;
  const uint8_t* row = base + j * kRow;
  for (size_t o = 0; o < kRow; o += 64) prefetch_l2(row + kPrefetchBytes + o);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) x[g] = Kv::Load(row + g * kL * Kv::kSize);
}

// out[0..4) = the sums of the lanes of a, b, c, d. On AVX-512 one transpose-add tree: 13
// instructions, where four horizontal sums take about 32 on the shuffle port.
#if HWY_TARGET <= HWY_AVX3
[[maybe_unused]] HWY_INLINE void SumOfLanes4(VF a, VF b, VF c, VF d, float* out) {
  // Within each 128-bit block: [a0+a2, b0+b2, a1+a3, b1+b3], and the same for c, d.
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a.raw, b.raw), _mm512_unpackhi_ps(a.raw, b.raw));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c.raw, d.raw), _mm512_unpackhi_ps(c.raw, d.raw));
  // Each 128-bit block: the sums of its four elements of a, b, c, d.
  __m512 x = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  // The four blocks added up.
  x = _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(1, 0, 3, 2)));
  x = _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
  _mm_storeu_ps(out, _mm512_castps512_ps128(x));
}
#else
// With 8-lane vectors (AVX2, for AttendRangeInChunks): interleave pairs, then 64-bit pairs,
// which leaves each 128-bit half holding four partial sums; then add the halves. Other widths
// sum each vector alone (nothing calls them here in decode).
[[maybe_unused]] HWY_INLINE void SumOfLanes4(VF a, VF b, VF c, VF d, float* out) {
  const DF df;
#if HWY_TARGET != HWY_SCALAR && HWY_HAVE_FLOAT64
  if constexpr (hn::MaxLanes(DF()) == 8) {
    const hn::Repartition<double, DF> dd;
    const auto pair = [&](VF x, VF y) { return hn::Add(hn::InterleaveLower(df, x, y), hn::InterleaveUpper(df, x, y)); };
    const auto ab = hn::BitCast(dd, pair(a, b)), cd = hn::BitCast(dd, pair(c, d));
    const VF x = hn::Add(hn::BitCast(df, hn::InterleaveLower(dd, ab, cd)), hn::BitCast(df, hn::InterleaveUpper(dd, ab, cd)));
    const hn::Half<DF> dh;
    hn::StoreU(hn::LowerHalf(dh, hn::Add(x, hn::ConcatUpperUpper(df, x, x))), dh, out);
    return;
  }
#endif
  out[0] = hn::GetLane(hn::SumOfLanes(df, a));
  out[1] = hn::GetLane(hn::SumOfLanes(df, b));
  out[2] = hn::GetLane(hn::SumOfLanes(df, c));
  out[3] = hn::GetLane(hn::SumOfLanes(df, d));
}
#endif

// AttendRange for R rows of G vectors each (d = G * lanes) in one pass over the keys: each key's
// and each value's vectors are widened once, in registers, for all R rows; the R x G
// accumulators stay in registers over the whole range (rescaled once per block); and the K and V
// streams are prefetched kPrefetchBytes ahead, which the hardware prefetchers alone do not keep
// up with once the cache no longer fits in the CPU's caches.
template <class Kv, int R, int G>
void AttendRangeInRegisters(const float* q, int d, const KvHeadView& kv, int64_t k0, int64_t k1, int32_t qp,
                            float* acc, float* m, float* l) {
  const DF df;
  constexpr size_t kL = hn::MaxLanes(DF());
  constexpr size_t kRow = G * kL * Kv::kSize;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  VF qv[R][G], a[R][G];
  for (int r = 0; r < R; ++r) {
    m[r] = kNegInf, l[r] = 0.0f;
    for (int g = 0; g < G; ++g) qv[r][g] = hn::LoadU(df, q + r * d + g * kL), a[r][g] = hn::Zero(df);
  }
  HWY_ALIGN float s[R][kDecodeBlock];
  for (int64_t j0 = k0; j0 < k1; j0 += kDecodeBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kDecodeBlock, k1 - j0));
    const uint8_t* kb = static_cast<const uint8_t*>(kv.k) + static_cast<size_t>(j0) * kRow;
    // Scores four keys at a time: each row's four products are summed by one transpose-add.
    const auto products = [&](int j, VF* t) HWY_ATTR {
      VF k[G];
      LoadRow<Kv, G>(kb, j, k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        t[r] = hn::Mul(qv[r][0], k[0]);
#pragma GCC unroll 8
        for (int g = 1; g < G; ++g) t[r] = hn::MulAdd(qv[r][g], k[g], t[r]);
      }
    };
    int jk = 0;
    for (; jk + 4 <= nb; jk += 4) {
      VF t[4][R];
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) products(jk + u, t[u]);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) SumOfLanes4(t[0][r], t[1][r], t[2][r], t[3][r], &s[r][jk]);
    }
    for (; jk < nb; ++jk) {
      VF t[R];
      products(jk, t);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) s[r][jk] = hn::GetLane(hn::SumOfLanes(df, t[r]));
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF c = hn::Set(df, SoftmaxBlock(s[r], kv.pos + j0, nb, qp, lowest_visible(kv, qp), scale, m[r], l[r]));
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) a[r][g] = hn::Mul(a[r][g], c);
    }
    const uint8_t* vb = static_cast<const uint8_t*>(kv.v) + static_cast<size_t>(j0) * kRow;
    for (int j = 0; j < nb; ++j) {
      VF v[G];
      LoadRow<Kv, G>(vb, j, v);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const VF p = hn::Set(df, s[r][j]);
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) a[r][g] = hn::MulAdd(p, v[g], a[r][g]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int g = 0; g < G; ++g) hn::StoreU(a[r][g], df, acc + r * d + g * kL);
  }
}

// Rows per group of AttendRangeInChunks: 3 with AVX2's 16 registers, 4 with AVX-512's 32 (4R
// partial sums or accumulators, R query vectors or weights and one key or value vector).
constexpr int kChunkRows = hn::MaxLanes(DF()) >= 16 ? 4 : 3;

// One block of nb keys (K rows at kb, V rows at vb) for R rows of AttendRangeInChunks, whose
// accumulators lie in acc: scores four keys at a time, a dimension vector at a time (4R partial
// sums); the online softmax; then the values in chunks of 4 vectors of each accumulator row (4R
// accumulators), so that each K and V vector is widened once for all R rows. With prefetch, the
// K and V rows kPrefetchBytes ahead are asked for (the block's first group of rows; the others
// find its rows in the cache).
template <class Kv, int R>
HWY_INLINE void ChunkBlock(const float* q, int d, const uint8_t* kb, const uint8_t* vb, int nb, const int32_t* pos,
                           int32_t qp, int32_t lo, float scale, bool prefetch_ahead, float* acc, float* m, float* l) {
  const DF df;
  constexpr size_t kL = hn::MaxLanes(DF());
  constexpr int kChunk = 4;  // vectors of an accumulator row per pass over a block's values
  const int G = d / static_cast<int>(kL);
  const size_t row_bytes = static_cast<size_t>(d) * Kv::kSize;
  const auto prefetch = [&](const uint8_t* row) {
    for (size_t o = 0; o < row_bytes; o += 64) prefetch_l2(row + kPrefetchBytes + o);
  };
  HWY_ALIGN float s[R][kDecodeBlock];
  for (int jk = 0; jk < nb; jk += 4) {
    // Past nb (the last group of the range) the fourth, third ... key repeats the last one.
    const uint8_t* key[4];
    for (int u = 0; u < 4; ++u) key[u] = kb + static_cast<size_t>(std::min(jk + u, nb - 1)) * row_bytes;
    if (prefetch_ahead) {
      for (int u = 0; u < 4; ++u) prefetch(key[u]);
    }
    VF t[4][R];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) t[u][r] = hn::Zero(df);
    }
    for (int g = 0; g < G; ++g) {
      VF qg[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) qg[r] = hn::LoadU(df, q + r * d + g * kL);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const VF k = Kv::Load(key[u] + g * kL * Kv::kSize);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) t[u][r] = hn::MulAdd(qg[r], k, t[u][r]);
      }
    }
    // (Scores past nb, of the repeated key, are written but not read.)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) SumOfLanes4(t[0][r], t[1][r], t[2][r], t[3][r], &s[r][jk]);
  }
  float c[R];
  for (int r = 0; r < R; ++r) c[r] = SoftmaxBlock(s[r], pos, nb, qp, lo, scale, m[r], l[r]);
  for (int g0 = 0; g0 < G; g0 += kChunk) {
    VF a[R][kChunk];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF vc = hn::Set(df, c[r]);
#pragma GCC unroll 4
      for (int g = 0; g < kChunk; ++g) a[r][g] = hn::Mul(hn::LoadU(df, acc + r * d + (g0 + g) * kL), vc);
    }
    for (int j = 0; j < nb; ++j) {
      const uint8_t* row = vb + static_cast<size_t>(j) * row_bytes;
      if (prefetch_ahead && g0 == 0) prefetch(row);
      VF p[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) p[r] = hn::Set(df, s[r][j]);
#pragma GCC unroll 4
      for (int g = 0; g < kChunk; ++g) {
        const VF v = Kv::Load(row + (g0 + g) * kL * Kv::kSize);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) a[r][g] = hn::MulAdd(p[r], v, a[r][g]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int g = 0; g < kChunk; ++g) hn::StoreU(a[r][g], df, acc + r * d + (g0 + g) * kL);
    }
  }
}

// AttendRange for any number of rows where the registers hold neither the query rows nor the
// accumulators of a whole head (AVX2, AVX-512 with a head wider than 64 or more than 3 rows):
// block by block of keys, the rows in groups of kChunkRows (ChunkBlock); a block's K and V rows
// come from memory for the first group and from the cache for the others. The accumulators live
// in acc between blocks, groups and chunks; acc, m and l come zeroed (AttendRange).
template <class Kv>
void AttendRangeInChunks(const float* q, int n_rows, int d, const KvHeadView& kv, int64_t k0, int64_t k1, int32_t qp,
                         float* acc, float* m, float* l) {
  const size_t row_bytes = static_cast<size_t>(d) * Kv::kSize;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int32_t lo = lowest_visible(kv, qp);
  for (int64_t j0 = k0; j0 < k1; j0 += kDecodeBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kDecodeBlock, k1 - j0));
    const uint8_t* kb = static_cast<const uint8_t*>(kv.k) + static_cast<size_t>(j0) * row_bytes;
    const uint8_t* vb = static_cast<const uint8_t*>(kv.v) + static_cast<size_t>(j0) * row_bytes;
    for (int r0 = 0; r0 < n_rows; r0 += kChunkRows) {
      const float* qr = q + static_cast<size_t>(r0) * d;
      float* ar = acc + static_cast<size_t>(r0) * d;
      const bool ahead = r0 == 0;
      switch (std::min(kChunkRows, n_rows - r0)) {
        case 1: ChunkBlock<Kv, 1>(qr, d, kb, vb, nb, kv.pos + j0, qp, lo, scale, ahead, ar, m + r0, l + r0); break;
        case 2: ChunkBlock<Kv, 2>(qr, d, kb, vb, nb, kv.pos + j0, qp, lo, scale, ahead, ar, m + r0, l + r0); break;
        case 3: ChunkBlock<Kv, 3>(qr, d, kb, vb, nb, kv.pos + j0, qp, lo, scale, ahead, ar, m + r0, l + r0); break;
        default:
          if constexpr (kChunkRows >= 4) {
            ChunkBlock<Kv, 4>(qr, d, kb, vb, nb, kv.pos + j0, qp, lo, scale, ahead, ar, m + r0, l + r0);
          }
          break;
      }
    }
  }
}

// AttendRangeInChunks by storage type, where vectors have 8 lanes (AVX2) or 16 (AVX-512) and the
// head is a whole number of 4-vector chunks. Returns false for other shapes and targets (a
// template, so that theirs never instantiate the kernels).
template <class D = DF>
bool AttendInChunks(const float* q, int n_rows, int d, const KvHeadView& kv, int64_t k0, int64_t k1, int32_t qp,
                    float* acc, float* m, float* l) {
  constexpr int kL = static_cast<int>(hn::MaxLanes(D()));
  if constexpr (HWY_TARGET == HWY_SCALAR || !HWY_HAVE_FLOAT64 || (kL != 8 && kL != 16)) {
    return false;
  } else {
    if (d % (4 * kL) != 0) return false;
    switch (kv.type) {
      case KvType::kF16: AttendRangeInChunks<KvF16>(q, n_rows, d, kv, k0, k1, qp, acc, m, l); break;
      case KvType::kBF16: AttendRangeInChunks<KvBF16>(q, n_rows, d, kv, k0, k1, qp, acc, m, l); break;
      case KvType::kF32: AttendRangeInChunks<KvF32>(q, n_rows, d, kv, k0, k1, qp, acc, m, l); break;
    }
    return true;
  }
}

// AttendRangeInRegisters for up to 3 rows of 4 vectors, by storage type: 12 query and 12
// accumulator vectors, which fit AVX-512's 32 registers (a 64-wide head there, as the default
// model's). Returns false for other shapes and targets.
template <int R>
bool AttendRangeInRegisters(const float* q, int d, const KvHeadView& kv, int64_t k0, int64_t k1, int32_t qp,
                            float* acc, float* m, float* l) {
  if constexpr (HWY_TARGET > HWY_AVX3) {
    return false;
  } else {
    if (d != 4 * static_cast<int>(hn::MaxLanes(DF()))) return false;
    switch (kv.type) {
      case KvType::kF16: AttendRangeInRegisters<KvF16, R, 4>(q, d, kv, k0, k1, qp, acc, m, l); break;
      case KvType::kBF16: AttendRangeInRegisters<KvBF16, R, 4>(q, d, kv, k0, k1, qp, acc, m, l); break;
      case KvType::kF32: AttendRangeInRegisters<KvF32, R, 4>(q, d, kv, k0, k1, qp, acc, m, l); break;
    }
    return true;
  }
}

// One token's n_rows query rows q [n_rows, d] (the heads of a GQA group) over the keys
// [k0, k1) of kv: each row's unnormalized accumulator acc [n_rows, d], running max m and sum l,
// to be merged with the other key ranges of the same rows (flash-decoding).
void AttendRange(const float* q, int n_rows, int d, const KvHeadView& kv, int64_t k0, int64_t k1, int32_t qp,
                 float* acc, float* m, float* l) {
  if (n_rows <= 3) {
    const bool done = n_rows == 3   ? AttendRangeInRegisters<3>(q, d, kv, k0, k1, qp, acc, m, l)
                      : n_rows == 2 ? AttendRangeInRegisters<2>(q, d, kv, k0, k1, qp, acc, m, l)
                                    : AttendRangeInRegisters<1>(q, d, kv, k0, k1, qp, acc, m, l);
    if (done) return;
  }
  std::fill(acc, acc + static_cast<size_t>(n_rows) * d, 0.0f);
  std::fill(m, m + n_rows, kNegInf);
  std::fill(l, l + n_rows, 0.0f);
  if (AttendInChunks(q, n_rows, d, kv, k0, k1, qp, acc, m, l)) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> kbuf, vbuf;
  if (kv.type != KvType::kF32) kbuf.resize(static_cast<size_t>(d) * kKeyBlock), vbuf.resize(kbuf.size());
  HWY_ALIGN float s[kKeyBlock];
  for (int64_t j0 = k0; j0 < k1; j0 += kKeyBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kKeyBlock, k1 - j0));
    const float* kb = BlockF32(kv.type, kv.k, j0, nb, d, kbuf.data());
    const float* vb = BlockF32(kv.type, kv.v, j0, nb, d, vbuf.data());
    for (int r = 0; r < n_rows; ++r) {
      const float* qr = q + static_cast<size_t>(r) * d;
      ScoresDirect(qr, kb, nb, d, s);
      const float c = SoftmaxBlock(s, kv.pos + j0, nb, qp, lowest_visible(kv, qp), scale, m[r], l[r]);
      AccumulateValues(acc + static_cast<size_t>(r) * d, c, s, vb, nb, d);
    }
  }
}

// Column sums (or maxima, take_max) of query head h's attention probabilities over the entries
// of its KV head: pass 1 finds each row's max and softmax denominator, pass 2 adds each
// probability to its column. With lse_out, pass 1 only: each row's log-sum-exp goes there.
void ColumnSumsHead(const float* q, const int32_t* q_pos, int64_t n_tok, int h, int n_head, int d,
                    const KvHeadView& kv, const float* lse, bool take_max, float* col, float* lse_out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const bool transpose = n_tok >= kTransposeMinRows;
  std::vector<float> kt(transpose ? static_cast<size_t>(d) * kKeyBlock : 0);
  std::vector<float> kbuf(kv.type != KvType::kF32 ? static_cast<size_t>(d) * kKeyBlock : 0);
  std::vector<float> m(n_tok, kNegInf), l(n_tok, 0.0f);
  HWY_ALIGN float s[kKeyBlock];
  const int32_t max_pos = *std::max_element(q_pos, q_pos + n_tok);
  const int64_t n_keys = std::upper_bound(kv.pos, kv.pos + kv.n, max_pos) - kv.pos;

  // With the rows' log-sum-exp from attention, p = exp(s * scale - lse): one pass.
  if (lse) {
    for (int64_t t = 0; t < n_tok; ++t) m[t] = lse[t * n_head + h], l[t] = 1.0f;
  }
  for (int pass = lse ? 1 : 0; pass < (lse_out ? 1 : 2); ++pass) {
    for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
      const int nb = static_cast<int>(std::min<int64_t>(kKeyBlock, n_keys - j0));
      const float* kb = BlockF32(kv.type, kv.k, j0, nb, d, kbuf.data());
      if (transpose) TransposeBlock(kb, nb, d, kt.data());
      for (int64_t t = 0; t < n_tok; ++t) {
        const float* qr = q + (t * n_head + h) * d;
        if (transpose) {
          ScoresTransposed<1>(&qr, kt.data(), d, s);
        } else {
          ScoresDirect(qr, kb, nb, d, s);
        }
        if (pass == 0) {
          SoftmaxBlock(s, kv.pos + j0, nb, q_pos[t], lowest_visible(kv, q_pos[t]), scale, m[t], l[t]);
          continue;
        }
        // p = exp(s * scale - m) / l, with masked keys at p = 0.
        const DF df;
        const int n = static_cast<int>(hn::Lanes(df));
        const VF vs = hn::Set(df, scale), vm = hn::Set(df, m[t]), vinv = hn::Set(df, 1.0f / l[t]);
        const int32_t* pos = kv.pos + j0;
        const int32_t lo = lowest_visible(kv, q_pos[t]);
        int j = 0;
        if (pos[nb - 1] <= q_pos[t] && pos[0] >= lo) {
          for (; j + n <= nb; j += n) {
            const VF p = hn::Mul(hn::Exp(df, hn::MulSub(hn::LoadU(df, s + j), vs, vm)), vinv);
            const VF c = hn::LoadU(df, col + j0 + j);
            hn::StoreU(take_max ? hn::Max(c, p) : hn::Add(c, p), df, col + j0 + j);
          }
        }
        for (; j < nb; ++j) {
          if (pos[j] > q_pos[t] || pos[j] < lo) continue;
          const float p = std::exp(s[j] * scale - m[t]) / l[t];
          col[j0 + j] = take_max ? std::max(col[j0 + j], p) : col[j0 + j] + p;
        }
      }
    }
  }
  if (lse_out) {
    for (int64_t t = 0; t < n_tok; ++t) lse_out[t * n_head + h] = l[t] > 0 ? m[t] + std::log(l[t]) : kNegInf;
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace snapkv {

HWY_EXPORT(AttendTileT);
HWY_EXPORT(AttendRange);
HWY_EXPORT(ColumnSumsHead);

size_t kv_type_size(KvType t) { return t == KvType::kF32 ? sizeof(float) : sizeof(uint16_t); }

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::kF16: return "f16";
    case KvType::kBF16: return "bf16";
    case KvType::kF32: break;
  }
  return "f32";
}

void kv_row_to_f32(KvType type, const void* base, int64_t j, int d, float* out) {
  for (int i = 0; i < d; ++i) out[i] = attention_detail::kv_scalar(type, base, static_cast<size_t>(j) * d + i);
}

namespace {

// [k0, k1) ranges of whole blocks over n keys, of about `chunk` keys each (a multiple of the
// block) and of equal size, so that the threads' shares stay balanced; at least one, even empty.
std::vector<std::pair<int64_t, int64_t>> key_ranges(int64_t n, int64_t chunk) {
  using attention_detail::kKeyBlock;
  const int64_t parts = std::max<int64_t>(1, (n + chunk - 1) / chunk), blocks = (n + kKeyBlock - 1) / kKeyBlock;
  std::vector<std::pair<int64_t, int64_t>> r;
  for (int64_t p = 0; p < parts; ++p) {
    r.emplace_back(std::min(n, blocks * p / parts * kKeyBlock), std::min(n, blocks * (p + 1) / parts * kKeyBlock));
  }
  return r;
}

// Keys per range when `total` keys are split in about `per_thread` ranges per thread, none below
// 4 blocks: a whole number of blocks.
int64_t key_chunk(int64_t total, int per_thread, const ThreadPool& pool) {
  using attention_detail::kKeyBlock;
  const int64_t per_item = std::max<int64_t>(4 * kKeyBlock, total / (per_thread * pool.size()));
  return (per_item + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
}

// One key range's partial result for one query row: unnormalized accumulator [d], max, sum.
struct Partial {
  const float* acc;
  float m, l;
};

// The output row (and its log-sum-exp) of partial results over disjoint key ranges.
void merge_partials(std::span<const Partial> parts, int d, float* o, float* lse) {
  float mx = attention_detail::kNegInf;
  for (const Partial& p : parts) mx = std::max(mx, p.m);
  std::fill(o, o + d, 0.0f);
  if (lse) *lse = mx;
  if (mx == attention_detail::kNegInf) return;  // no visible key
  float sum = 0;
  for (const Partial& p : parts) {
    if (p.m == attention_detail::kNegInf) continue;
    const float f = std::exp(p.m - mx);
    sum += p.l * f;
    for (int i = 0; i < d; ++i) o[i] += p.acc[i] * f;
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < d; ++i) o[i] *= inv;
  if (lse) *lse = mx + std::log(sum);
}

// A few query tokens of one sequence (speculative decoding's verification). Their keys are split
// into ranges that the threads take apart; each range is attended by every token in turn with
// the decode kernel (read from memory once, then from the core's cache), and the ranges' results
// are merged by their log-sum-exp, as in attention_decode: the prefill's token tiles would give
// each thread whole KV heads, fewer than the threads with few KV heads. Every range holds keys
// that all tokens see (positions up to the first token's); the last also holds the tokens' own.
void attention_few(const float* q, const int32_t* q_pos, int n_tok, int n_head, int d,
                   std::span<const KvHeadView> kv, float* out, ThreadPool& pool, float* lse) {
  const int n_kv = static_cast<int>(kv.size()), n_group = n_head / n_kv;
  struct Item {
    int hk;
    KvHeadView keys;
  };
  std::vector<int64_t> shared(n_kv);
  int64_t total = 0;
  for (int hk = 0; hk < n_kv; ++hk) {
    total += shared[hk] = std::upper_bound(kv[hk].pos, kv[hk].pos + kv[hk].n, q_pos[0]) - kv[hk].pos;
  }
  const int64_t chunk = key_chunk(total, 4, pool);
  std::vector<Item> items;
  for (int hk = 0; hk < n_kv; ++hk) {
    const KvHeadView& v = kv[hk];
    const size_t row = static_cast<size_t>(d) * kv_type_size(v.type);
    std::vector<std::pair<int64_t, int64_t>> ranges = key_ranges(shared[hk], chunk);
    ranges.back().second = v.n;
    for (const auto& [k0, k1] : ranges) {
      items.push_back({hk, {k1 - k0, static_cast<const uint8_t*>(v.k) + k0 * row,
                            static_cast<const uint8_t*>(v.v) + k0 * row, v.pos + k0, v.type, v.window}});
    }
  }
  // Per item, each token's group of rows over the range in turn: the range is read from memory
  // once and from the core's cache for the other tokens.
  const size_t rows = static_cast<size_t>(n_tok) * n_group;
  std::vector<float> acc(items.size() * rows * d), m(items.size() * rows), l(items.size() * rows);
  pool.for_each_item(static_cast<int64_t>(items.size()), [&](int64_t w) {
    const Item& it = items[w];
    for (int t = 0; t < n_tok; ++t) {
      const size_t row = w * rows + static_cast<size_t>(t) * n_group;
      HWY_DYNAMIC_DISPATCH(AttendRange)(q + (static_cast<size_t>(t) * n_head + it.hk * n_group) * d, n_group, d,
                                        it.keys, 0, it.keys.n, q_pos[t], acc.data() + row * d, m.data() + row,
                                        l.data() + row);
    }
  });
  std::vector<Partial> parts;
  for (int t = 0; t < n_tok; ++t) {
    for (int h = 0; h < n_head; ++h) {
      const int hk = h / n_group;
      parts.clear();
      for (size_t w = 0; w < items.size(); ++w) {
        const size_t row = w * rows + static_cast<size_t>(t) * n_group + h % n_group;
        if (items[w].hk == hk) parts.push_back({acc.data() + row * d, m[row], l[row]});
      }
      const size_t o = static_cast<size_t>(t) * n_head + h;
      merge_partials(parts, d, out + o * d, lse ? lse + o : nullptr);
    }
  }
}

}  // namespace

void attention_decode(const float* q, const int32_t* q_pos, int n_seq, int n_head, int head_dim,
                      std::span<const std::span<const KvHeadView>> kv, float* out, ThreadPool& pool, float* lse) {
  if (n_seq == 0) return;
  const int n_kv = static_cast<int>(kv[0].size());
  const int n_group = n_head / n_kv, d = head_dim;
  // Visible keys of each (sequence, KV head), from begin: entries are sorted by position.
  std::vector<int64_t> begin(static_cast<size_t>(n_seq) * n_kv), n_keys(begin.size());
  int64_t total = 0;
  for (int b = 0; b < n_seq; ++b) {
    for (int hk = 0; hk < n_kv; ++hk) {
      const KvHeadView& v = kv[b][hk];
      const int64_t i = b * n_kv + hk;
      begin[i] = std::lower_bound(v.pos, v.pos + v.n, attention_detail::lowest_visible(v, q_pos[b])) - v.pos;
      total += n_keys[i] = std::upper_bound(v.pos, v.pos + v.n, q_pos[b]) - v.pos - begin[i];
    }
  }
  // Key ranges of whole blocks, about eight per thread over everything, at least one, even empty,
  // per (sequence, KV head).
  const int64_t chunk = key_chunk(total, 8, pool);
  struct Item {
    int b, hk;
    int64_t k0, k1;
  };
  std::vector<Item> items;
  for (int b = 0; b < n_seq; ++b) {
    for (int hk = 0; hk < n_kv; ++hk) {
      const int64_t i = b * n_kv + hk;
      for (const auto& [k0, k1] : key_ranges(n_keys[i], chunk)) items.push_back({b, hk, begin[i] + k0, begin[i] + k1});
    }
  }
  const size_t rows = static_cast<size_t>(n_group);
  std::vector<float> acc(items.size() * rows * d), m(items.size() * rows), l(items.size() * rows);
  // Each thread takes a contiguous run of the items: a head's consecutive ranges are adjacent in
  // memory, so a thread's K and V streams, and their prefetch past the end of a range, run on into
  // its next one. Taking every nth item instead breaks the streams at every item and makes decode
  // slower, most of all with a long cache in memory.
  pool.run([&](int ith, int nth) {
    const size_t w0 = items.size() * ith / nth, w1 = items.size() * (ith + 1) / nth;
    for (size_t w = w0; w < w1; ++w) {
      const Item& it = items[w];
      HWY_DYNAMIC_DISPATCH(AttendRange)(q + (static_cast<size_t>(it.b) * n_head + it.hk * n_group) * d, n_group, d,
                                        kv[it.b][it.hk], it.k0, it.k1, q_pos[it.b], acc.data() + w * rows * d,
                                        m.data() + w * rows, l.data() + w * rows);
    }
  });
  // Merge the ranges of each (sequence, KV head): they are consecutive items.
  std::vector<Partial> parts;
  for (size_t w0 = 0; w0 < items.size();) {
    size_t w1 = w0 + 1;
    while (w1 < items.size() && items[w1].b == items[w0].b && items[w1].hk == items[w0].hk) ++w1;
    for (size_t r = 0; r < rows; ++r) {
      parts.clear();
      for (size_t w = w0; w < w1; ++w) parts.push_back({acc.data() + (w * rows + r) * d, m[w * rows + r], l[w * rows + r]});
      const size_t row = static_cast<size_t>(items[w0].b) * n_head + items[w0].hk * n_group + r;
      merge_partials(parts, d, out + row * d, lse ? lse + row : nullptr);
    }
    w0 = w1;
  }
}

void attention(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
               std::span<const KvHeadView> kv, float* out, ThreadPool& pool, float* lse) {
  using attention_detail::kTokenTile;
  if (n_tok == 1) {
    // Decode: one token; its keys are split among the threads instead of its few KV heads.
    const std::span<const KvHeadView> one[] = {kv};
    attention_decode(q, q_pos, 1, n_head, head_dim, one, out, pool, lse);
    return;
  }
  if (n_tok <= attention_detail::kFewTokens) {
    attention_few(q, q_pos, static_cast<int>(n_tok), n_head, head_dim, kv, out, pool, lse);
    return;
  }
  const int n_kv = static_cast<int>(kv.size());
  const int n_group = n_head / n_kv;
  const int64_t n_tiles = (n_tok + kTokenTile - 1) / kTokenTile;
  // Work items are (token tile, kv head), claimed one at a time; later tiles see more keys, so
  // they go first.
  const int64_t n_items = n_tiles * n_kv;
  pool.for_each_item(n_items, [&](int64_t i) {
    const int64_t w = n_items - 1 - i;
    const int hk = static_cast<int>(w % n_kv);
    const int64_t t0 = (w / n_kv) * kTokenTile;
    const int64_t t1 = std::min(n_tok, t0 + kTokenTile);
    HWY_DYNAMIC_DISPATCH(AttendTileT)(q, q_pos, t0, t1, hk * n_group, n_group, n_head, head_dim, kv[hk], out, lse);
  });
}

void attention_column_sums(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                           int head_dim, std::span<const KvHeadView> kv, std::span<float* const> col_sums,
                           ThreadPool& pool, const float* lse, ColumnReduce reduce) {
  if (n_tok == 0) return;
  const int n_group = n_head / static_cast<int>(kv.size());
  // One query head per work item: items never share a column-sum row.
  pool.run([&](int ith, int nth) {
    for (int h = ith; h < n_head; h += nth) {
      HWY_DYNAMIC_DISPATCH(ColumnSumsHead)(q, q_pos, n_tok, h, n_head, head_dim, kv[h / n_group], lse,
                                           reduce == ColumnReduce::kMax, col_sums[h], nullptr);
    }
  });
}

void attention_row_lse(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head, int head_dim,
                       std::span<const KvHeadView> kv, float* lse, ThreadPool& pool) {
  if (n_tok == 0) return;
  const int n_group = n_head / static_cast<int>(kv.size());
  pool.run([&](int ith, int nth) {
    for (int h = ith; h < n_head; h += nth) {
      HWY_DYNAMIC_DISPATCH(ColumnSumsHead)(q, q_pos, n_tok, h, n_head, head_dim, kv[h / n_group], nullptr, false,
                                           nullptr, lse);
    }
  });
}

void attention_reference(const float* q, const int32_t* q_pos, int64_t n_tok, int n_head,
                         int head_dim, std::span<const KvHeadView> kv, float* out) {
  const int n_group = n_head / static_cast<int>(kv.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int h = 0; h < n_head; ++h) {
      const KvHeadView& v = kv[h / n_group];
      const float* qr = q + (t * n_head + h) * head_dim;
      std::vector<double> s;
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < v.n; ++j) {
        if (v.pos[j] > q_pos[t] || v.pos[j] < attention_detail::lowest_visible(v, q_pos[t])) continue;
        double dot = 0;
        for (int i = 0; i < head_dim; ++i) {
          dot += static_cast<double>(qr[i]) * attention_detail::kv_scalar(v.type, v.k, j * head_dim + i);
        }
        s.push_back(dot * scale);
        idx.push_back(j);
      }
      const double mx = s.empty() ? 0 : *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      float* o = out + (t * n_head + h) * head_dim;
      for (int i = 0; i < head_dim; ++i) {
        double a = 0;
        for (size_t j = 0; j < s.size(); ++j) {
          a += s[j] * attention_detail::kv_scalar(v.type, v.v, idx[j] * head_dim + i);
        }
        o[i] = static_cast<float>(z > 0 ? a / z : 0);
      }
    }
  }
}

}  // namespace snapkv
#endif  // HWY_ONCE

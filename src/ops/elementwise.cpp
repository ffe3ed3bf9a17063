// Element-wise steps between the matmuls, and the argmax of the logits; SiLU·up and GELU·up (their
// exp is most of the step) and the argmax compiled per SIMD target (Highway foreach_target).
#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/elementwise.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace snapkv {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// gate = gate / (1 + exp(-gate)) * up. Highway's Exp is defined up to 88.72, so -gate is capped
// at 88: below gate = -88 the product is below 1e-36 either way. A NaN stays a NaN.
void SiluMulT(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto one = hn::Set(df, 1.0f), cap = hn::Set(df, 88.0f);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto g = hn::LoadU(df, gate + i);
    const auto e = hn::Exp(df, hn::Min(hn::Neg(g), cap));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(df, up + i)), df, gate + i);
  }
  for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// gate = gelu_tanh(gate) * up, where gelu_tanh(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x / (1 + exp(-2u)) (the same function: 1 + tanh(u) = 2 / (1 + exp(-2u))), with -2u
// capped like SiLU's argument.
void GeluTanhMulT(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  constexpr float kA = -2.0f * 0.7978845608028654f, kB = 0.044715f;
  const auto one = hn::Set(df, 1.0f), cap = hn::Set(df, 88.0f), a = hn::Set(df, kA), b = hn::Set(df, kB);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(df, gate + i);
    const auto minus_2u = hn::Mul(hn::Mul(a, x), hn::MulAdd(hn::Mul(b, x), x, one));
    const auto e = hn::Exp(df, hn::Min(minus_2u, cap));
    hn::StoreU(hn::Mul(hn::Div(x, hn::Add(one, e)), hn::LoadU(df, up + i)), df, gate + i);
  }
  for (; i < n; ++i) {
    const float x = gate[i];
    gate[i] = x / (1.0f + std::exp(std::min(kA * x * (1.0f + kB * x * x), 88.0f))) * up[i];
  }
}

// The first i with x[i] the largest value of x; NaNs are passed over (0 if all are NaN).
int64_t ArgmaxT(const float* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto lowest = hn::Set(df, -HUGE_VALF);
  // The largest value, NaN lanes read as -inf; two running maxima, so the loads overlap.
  auto m0 = lowest, m1 = lowest;
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(df, x + i), b = hn::LoadU(df, x + i + lanes);
    m0 = hn::Max(m0, hn::IfThenElse(hn::Eq(a, a), a, lowest));
    m1 = hn::Max(m1, hn::IfThenElse(hn::Eq(b, b), b, lowest));
  }
  float m = hn::GetLane(hn::MaxOfLanes(df, hn::Max(m0, m1)));
  for (int64_t j = i; j < n; ++j) m = x[j] > m ? x[j] : m;
  // Then where it first occurs.
  const auto mv = hn::Set(df, m);
  for (i = 0; i + lanes <= n; i += lanes) {
    const intptr_t k = hn::FindFirstTrue(df, hn::Eq(hn::LoadU(df, x + i), mv));
    if (k >= 0) return i + k;
  }
  for (; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace snapkv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace snapkv {

HWY_EXPORT(SiluMulT);
HWY_EXPORT(GeluTanhMulT);
HWY_EXPORT(ArgmaxT);

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void silu_mul_inplace(float* gate, const float* up, int64_t n) { HWY_DYNAMIC_DISPATCH(SiluMulT)(gate, up, n); }

void gelu_tanh_mul_inplace(float* gate, const float* up, int64_t n) { HWY_DYNAMIC_DISPATCH(GeluTanhMulT)(gate, up, n); }

int64_t argmax(const float* x, int64_t n) { return n > 0 ? HWY_DYNAMIC_DISPATCH(ArgmaxT)(x, n) : 0; }

void add_bias(float* y, const float* b, int64_t n_rows, int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) add_inplace(y + r * n, b, n);
}

}  // namespace snapkv
#endif  // HWY_ONCE

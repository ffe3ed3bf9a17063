// fp16/bf16 conversions (scalar, and the KV cache's SIMD rows) and the scalar reference
// dequantizers, on hand-built blocks whose values are worked out by hand (a few literal checks per
// type) and by an element-wise restatement of the GGML format (every element).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/convert.h"
#include "ops/dequant.h"
#include "ops/fp16.h"
#include "support/simd_targets.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400;
constexpr uint16_t kHalfTwo = 0x4000, kHalfMinusOne = 0xBC00, kHalfEighth = 0x3000;

// ---------------------------------------------------------------------------------------------
// fp16 / bf16

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_f32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(fp16_to_f32(0x8000)));
  EXPECT_EQ(fp16_to_f32(kHalfOne), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_f32(0x7BFF), 65504.0f);                // largest finite
  EXPECT_EQ(fp16_to_f32(0x0400), std::ldexp(1.0f, -14));   // smallest normal
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));   // smallest subnormal
  EXPECT_EQ(fp16_to_f32(0x03FF), std::ldexp(1023.0f, -24)); // largest subnormal
  EXPECT_EQ(fp16_to_f32(0x8200), -std::ldexp(1.0f, -15));
  EXPECT_EQ(fp16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7C01)));  // signalling NaN stays NaN
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_f32(0x7E01)), 0x7FC02000u);  // payload kept

  EXPECT_EQ(f32_to_fp16(1.0f), kHalfOne);
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_fp16(65519.99f), 0x7BFF);  // below the rounding midpoint to inf
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7C00);   // midpoint, ties to even = inf
  EXPECT_EQ(f32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), kHalfOne);      // tie, down to even
  EXPECT_EQ(f32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);    // tie, up to even
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);          // tie to even (zero)
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);          // 1.5 ulp: tie, up to even
  EXPECT_EQ(f32_to_fp16(std::ldexp(1023.75f, -24)), 0x0400);      // rounds into the normals
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -30)), 0x0000);
  const uint16_t nan = f32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A NaN whose payload sits only in bits that do not fit must not become infinity.
  EXPECT_NE(f32_to_fp16(std::bit_cast<float>(0x7F800001u)) & 0x03FF, 0);
}

TEST(Fp16, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(f)))) << h;
      continue;
    }
    ASSERT_EQ(f32_to_fp16(f), h) << std::hex << h;
  }
}

// GCC's _Float16 conversion (libgcc, round to nearest even) as an independent oracle.
TEST(Fp16, MatchesCompilerConversion) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns cover every exponent, including subnormal and overflow ranges.
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    ASSERT_EQ(f32_to_fp16(f), std::bit_cast<uint16_t>(h)) << f;
    ASSERT_EQ(fp16_to_f32(std::bit_cast<uint16_t>(h)), static_cast<float>(h));
  }
  for (int i = 0; i < 200000; ++i) {  // and values near the half range
    const float f = std::ldexp(static_cast<float>(rng()) / 4294967296.0f - 0.5f,
                               static_cast<int>(rng() % 48) - 30);
    ASSERT_EQ(f32_to_fp16(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
}

// The KV cache's row conversion (vcvtps2ph where the target has F16C) against the same oracle,
// at every SIMD target, over rows whose lengths and offsets leave tails and unaligned stores.
TEST(Fp16, RowConversionMatchesCompilerConversionAtEveryTarget) {
  std::mt19937 rng(11);
  std::vector<float> src;
  for (int i = 0; i < 40000; ++i) src.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (uint32_t h = 0; h < 0x7C00; h += 7) {  // ties between neighbouring halves
    const float lo = fp16_to_f32(static_cast<uint16_t>(h)), hi = fp16_to_f32(static_cast<uint16_t>(h + 1));
    src.push_back(lo + (hi - lo) / 2);
    src.push_back(-(lo + (hi - lo) / 2));
  }
  src.push_back(std::bit_cast<float>(0x7F800001u));  // signalling NaN
  src.push_back(-std::numeric_limits<float>::quiet_NaN());
  test::for_each_target([&] {
    for (size_t off : {size_t{0}, size_t{3}}) {
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, static_cast<int64_t>(src.size() - off)}) {
        std::vector<uint8_t> dst(2 * static_cast<size_t>(n) + 1);
        f32_to_fp16_row(src.data() + off, dst.data() + 1, n);  // odd address
        for (int64_t i = 0; i < n; ++i) {
          const float f = src[off + static_cast<size_t>(i)];
          uint16_t got;
          std::memcpy(&got, dst.data() + 1 + 2 * i, 2);
          const uint16_t want = std::isnan(f) ? f32_to_fp16(f) : std::bit_cast<uint16_t>(static_cast<_Float16>(f));
          ASSERT_EQ(got, want) << "n " << n << " i " << i << " f " << f;
        }
      }
    }
  });
}

TEST(Bf16, KnownValues) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x0001), std::bit_cast<float>(0x00010000u));  // subnormal
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, down to even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, up to even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // overflow to inf
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7F800001u)) & 0x7FC0, 0x7FC0);  // quiet NaN
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), h);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Blocks

std::vector<float> dequant(GgmlType type, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(type, src, out.data(), n);
  return out;
}

TEST(Dequant, PlainTypes) {
  const float f32[3] = {1.5f, -0.0f, 3e-40f};
  EXPECT_EQ(dequant(GgmlType::F32, f32, 3), std::vector<float>({1.5f, -0.0f, 3e-40f}));
  const uint16_t f16[4] = {kHalfOne, 0xC000, 0x0001, 0x7BFF};
  EXPECT_EQ(dequant(GgmlType::F16, f16, 4),
            std::vector<float>({1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f}));
  const uint16_t bf16[3] = {0x3F80, 0xC040, 0x4049};
  EXPECT_EQ(dequant(GgmlType::BF16, bf16, 3), std::vector<float>({1.0f, -3.0f, 3.140625f}));
}

TEST(Dequant, Q4_0) {
  BlockQ4_0 b[2];
  b[0].d = kHalfHalf;  // 0.5
  for (int j = 0; j < 16; ++j) b[0].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  b[1].d = kHalfMinusOne;
  std::memset(b[1].qs, 0x8F, sizeof(b[1].qs));  // low nibble 15, high nibble 8
  const std::vector<float> y = dequant(GgmlType::Q4_0, b, 64);
  EXPECT_EQ(y[0], -4.0f);   // (0 - 8) * 0.5
  EXPECT_EQ(y[9], 0.5f);    // (9 - 8) * 0.5
  EXPECT_EQ(y[15], 3.5f);   // (15 - 8) * 0.5
  EXPECT_EQ(y[16], 3.5f);   // high nibble of qs[0] = 15
  EXPECT_EQ(y[31], -4.0f);  // high nibble of qs[15] = 0
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f);
    EXPECT_EQ(y[16 + j], (7 - j) * 0.5f);
    EXPECT_EQ(y[32 + j], -7.0f);
    EXPECT_EQ(y[48 + j], -0.0f);
  }
}

TEST(Dequant, Q4_1) {
  BlockQ4_1 b;
  b.d = kHalfQuarter;  // 0.25
  b.m = kHalfMinusOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((j ^ 5) << 4));
  const std::vector<float> y = dequant(GgmlType::Q4_1, &b, 32);
  EXPECT_EQ(y[0], -1.0f);    // 0 * 0.25 - 1
  EXPECT_EQ(y[15], 2.75f);   // 15 * 0.25 - 1
  EXPECT_EQ(y[16], 0.25f);   // (0 ^ 5) = 5 -> 1.25 - 1
  EXPECT_EQ(y[21], -1.0f);   // (5 ^ 5) = 0
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.0f);
    EXPECT_EQ(y[16 + j], (j ^ 5) * 0.25f - 1.0f);
  }
}

TEST(Dequant, Q5_0) {
  BlockQ5_0 b;
  b.d = kHalfTwo;
  const uint32_t qh = 0x00010002u;  // fifth bit set for elements 1 and 16
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> y = dequant(GgmlType::Q5_0, &b, 32);
  EXPECT_EQ(y[0], -32.0f);  // (0 - 16) * 2
  EXPECT_EQ(y[1], 2.0f);    // (1 + 16 - 16) * 2
  EXPECT_EQ(y[5], -22.0f);  // (5 - 16) * 2
  EXPECT_EQ(y[16], 30.0f);  // (15 + 16 - 16) * 2
  EXPECT_EQ(y[17], -4.0f);  // (14 - 16) * 2
  EXPECT_EQ(y[31], -32.0f);
  for (int j = 0; j < 32; ++j) {
    const int nib = j < 16 ? j : 31 - j;
    const int q = nib + (((qh >> j) & 1) ? 16 : 0);
    EXPECT_EQ(y[j], (q - 16) * 2.0f) << j;
  }
}

TEST(Dequant, Q5_1) {
  BlockQ5_1 b;
  b.d = kHalfHalf;
  b.m = kHalfQuarter;
  const uint32_t qh = 0x80000001u;  // elements 0 and 31
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(0xF0 | (j & 3));
  const std::vector<float> y = dequant(GgmlType::Q5_1, &b, 32);
  EXPECT_EQ(y[0], 8.25f);    // (0 + 16) * 0.5 + 0.25
  EXPECT_EQ(y[3], 1.75f);    // 3 * 0.5 + 0.25
  EXPECT_EQ(y[16], 7.75f);   // 15 * 0.5 + 0.25
  EXPECT_EQ(y[31], 15.75f);  // (15 + 16) * 0.5 + 0.25
  for (int j = 1; j < 16; ++j) EXPECT_EQ(y[j], (j & 3) * 0.5f + 0.25f);
  for (int j = 16; j < 31; ++j) EXPECT_EQ(y[j], 7.75f);
}

TEST(Dequant, Q8_0) {
  BlockQ8_0 b;
  b.d = kHalfEighth;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(8 * j - 128);
  const std::vector<float> y = dequant(GgmlType::Q8_0, &b, 32);
  EXPECT_EQ(y[0], -16.0f);  // -128 / 8
  EXPECT_EQ(y[31], 15.0f);  // 120 / 8
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j - 16.0f);
}

// Scales 1, 2, 3, 4, 17, 33, 63, 5 and mins 0, 1, 2, 3, 20, 40, 63, 7, packed by hand:
// bytes 0-3 = sc[0..3] | (sc[4..7] >> 4) << 6, bytes 4-7 = mn[0..3] | (mn[4..7] >> 4) << 6,
// bytes 8-11 = (sc[4..7] & 15) | (mn[4..7] & 15) << 4.
constexpr uint8_t kScales[12] = {0x41, 0x82, 0xC3, 0x04, 0x40, 0x81,
                                 0xC2, 0x03, 0x41, 0x81, 0xFF, 0x75};
constexpr int kSc[8] = {1, 2, 3, 4, 17, 33, 63, 5};
constexpr int kMn[8] = {0, 1, 2, 3, 20, 40, 63, 7};

TEST(Dequant, ScaleMinK4Unpacking) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    unpack_scale_min_k4(j, kScales, &sc, &mn);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(mn, kMn[j]) << j;
  }
}

TEST(Dequant, Q4_K) {
  BlockQ4_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  std::memcpy(b.scales, kScales, 12);
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) b.qs[32 * g + l] = static_cast<uint8_t>((l & 15) | (((l + g) & 15) << 4));
  }
  const std::vector<float> y = dequant(GgmlType::Q4_K, &b, 256);
  EXPECT_EQ(y[0], 0.0f);     // sub-block 0: 1 * 0 - 0.5 * 0
  EXPECT_EQ(y[1], 1.0f);     // 1 * 1
  EXPECT_EQ(y[32], -0.5f);   // sub-block 1 (high nibbles of qs[0..31]): 2 * 0 - 0.5 * 1
  EXPECT_EQ(y[133], 75.0f);  // sub-block 4, q = 5: 17 * 5 - 0.5 * 20
  EXPECT_EQ(y[255], 6.5f);   // sub-block 7, q = (31 + 3) & 15 = 2: 5 * 2 - 0.5 * 7
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32, g = i / 64, l = i % 32;
    const int q = (sub % 2 == 0) ? (l & 15) : ((l + g) & 15);
    EXPECT_EQ(y[i], static_cast<float>(kSc[sub]) * q - 0.5f * kMn[sub]) << i;
  }
}

TEST(Dequant, Q5_K) {
  BlockQ5_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  std::memcpy(b.scales, kScales, 12);
  for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>(l * 37);
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) b.qs[32 * g + l] = static_cast<uint8_t>((l & 15) | (((l + g) & 15) << 4));
  }
  const std::vector<float> y = dequant(GgmlType::Q5_K, &b, 256);
  // Element 1: qh[1] = 37 = 0b00100101, bit 0 set -> q = 1 + 16; sub-block 0 (sc 1, mn 0).
  EXPECT_EQ(y[1], 17.0f);
  // Element 33: sub-block 1, bit 1 of 37 clear -> q = 1; 2 * 1 - 0.5 * 1.
  EXPECT_EQ(y[33], 1.5f);
  // Element 133: sub-block 4, l = 5, qh[5] = 185 = 0b10111001, bit 4 set -> q = 21; 17 * 21 - 10.
  EXPECT_EQ(y[133], 347.0f);
  // Element 255: sub-block 7, l = 31, qh[31] = 1147 & 255 = 123 = 0b01111011, bit 7 clear -> q = 2.
  EXPECT_EQ(y[255], 6.5f);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32, g = i / 64, l = i % 32;
    const int lo4 = (sub % 2 == 0) ? (l & 15) : ((l + g) & 15);
    const int q = lo4 + (((l * 37 & 255) >> sub) & 1) * 16;
    EXPECT_EQ(y[i], static_cast<float>(kSc[sub]) * q - 0.5f * kMn[sub]) << i;
  }
}

TEST(Dequant, Q6_K) {
  BlockQ6_K b;
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 7);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 3);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i - 8);
  b.d = kHalfHalf;
  const std::vector<float> y = dequant(GgmlType::Q6_K, &b, 256);
  // Element 0: ql[0] = 0, qh[0] = 0 -> q = -32; scale -8: 0.5 * -8 * -32.
  EXPECT_EQ(y[0], 128.0f);
  // Element 1: ql[1] = 7, qh[1] = 3 -> q = 7 | 3 << 4 = 55 - 32 = 23; 0.5 * -8 * 23.
  EXPECT_EQ(y[1], -92.0f);
  // Element 97 (half 0, l = 1, fourth quarter): ql[33] = 231 -> high nibble 14, qh[1] >> 6 = 0
  // -> q = 14 - 32 = -18; scale index 6: -2 -> 0.5 * -2 * -18.
  EXPECT_EQ(y[97], 18.0f);
  // Element 128 + 16 (half 1, l = 16, first quarter): ql[80] = 560 & 255 = 48 -> low nibble 0;
  // qh[48] = 144 -> low 2 bits 0 -> q = -32; scale index 8 + 1 = 9 -> 1: 0.5 * 1 * -32.
  EXPECT_EQ(y[144], -16.0f);
  // Every element from its index: half h, quarter k, position l.
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    const int ql = (64 * h + l + (k % 2) * 32) * 7 & 255;
    const int lo4 = k < 2 ? (ql & 15) : (ql >> 4);
    const int hi2 = (((32 * h + l) * 3 & 255) >> (2 * k)) & 3;
    const int sc = (8 * h + l / 16 + 2 * k) - 8;
    EXPECT_EQ(y[i], 0.5f * sc * static_cast<float>((lo4 | hi2 << 4) - 32)) << i;
  }
}

TEST(Dequant, RejectsBadShapes) {
  float out[64];
  BlockQ4_0 b{};
  EXPECT_THROW(dequantize_row(GgmlType::Q4_0, &b, out, 31), Error);
  EXPECT_THROW(dequantize_row(GgmlType::Q2_K, &b, out, 256), Error);
  try {
    dequantize_row(GgmlType::Q3_K, &b, out, 256);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace snapkv

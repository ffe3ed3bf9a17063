#include "ops/dequant.h"

#include <cstring>

#include "ops/fp16.h"
#include "util/error.h"

namespace snapkv {
namespace {

template <typename Block>
const Block* blocks(const void* src) {
  return static_cast<const Block*>(src);
}

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
         (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
}

void dequant_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + kQK / 2] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + kQK / 2] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequant_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequant_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32) {  // 64 elements per group of two sub-blocks
      uint8_t sc, mn;
      unpack_scale_min_k4(2 * g, b[i].scales, &sc, &mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      unpack_scale_min_k4(2 * g + 1, b[i].scales, &sc, &mn);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int g = 0; g < 4; ++g, q += 32) {
      uint8_t sc, mn;
      unpack_scale_min_k4(2 * g, b[i].scales, &sc, &mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      unpack_scale_min_k4(2 * g + 1, b[i].scales, &sc, &mn);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
      const uint8_t bit1 = static_cast<uint8_t>(1u << (2 * g));
      const uint8_t bit2 = static_cast<uint8_t>(1u << (2 * g + 1));
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((q[l] & 0xF) + ((qh[l] & bit1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((q[l] >> 4) + ((qh[l] & bit2) ? 16 : 0)) - m2;
      }
    }
  }
}

void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    // Two halves of 128 elements; in each, ql[l] and ql[l + 32] carry four elements' low bits
    // (low nibble, high nibble) and qh[l] their four pairs of high bits.
    for (int h = 0; h < 2; ++h, y += 128) {
      const uint8_t* ql = b[i].ql + 64 * h;
      const uint8_t* qh = b[i].qh + 32 * h;
      const int8_t* sc = b[i].scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

void check_row_shape(GgmlType type, int64_t n, const char* what) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (!info.supported) {
    fail(ErrorKind::kUnsupported, "{}: tensor type {} is not supported by the kernels", what,
         info.name);
  }
  if (n <= 0 || n % info.block_elems != 0) {
    fail(ErrorKind::kInvalidArgument,
         "{}: row length {} is not a positive multiple of the {} block size {}", what, n,
         info.name, info.block_elems);
  }
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  check_row_shape(type, n, "dequantize_row");
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
      return;
    }
    case GgmlType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case GgmlType::Q4_0: return dequant_q4_0(blocks<BlockQ4_0>(src), dst, n / kQK);
    case GgmlType::Q4_1: return dequant_q4_1(blocks<BlockQ4_1>(src), dst, n / kQK);
    case GgmlType::Q5_0: return dequant_q5_0(blocks<BlockQ5_0>(src), dst, n / kQK);
    case GgmlType::Q5_1: return dequant_q5_1(blocks<BlockQ5_1>(src), dst, n / kQK);
    case GgmlType::Q8_0: return dequant_q8_0(blocks<BlockQ8_0>(src), dst, n / kQK);
    case GgmlType::Q4_K: return dequant_q4_k(blocks<BlockQ4_K>(src), dst, n / kQK_K);
    case GgmlType::Q5_K: return dequant_q5_k(blocks<BlockQ5_K>(src), dst, n / kQK_K);
    case GgmlType::Q6_K: return dequant_q6_k(blocks<BlockQ6_K>(src), dst, n / kQK_K);
    default: break;
  }
  fail(ErrorKind::kUnsupported, "dequantize_row: tensor type {} is not supported",
       ggml_type_info(type).name);
}

}  // namespace snapkv

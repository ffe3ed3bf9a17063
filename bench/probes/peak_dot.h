#pragma once
// The ceiling of the integer prefill GEMM (src/ops/gemm_q8*): multiply-adds per second of the
// AVX-512 VNNI dot-product instructions it is built on, in independent chains held in registers,
// on every thread of the pool. 8 bits: vpdpbusd (64 u8 x s8 products per instruction); 16 bits:
// vpdpwssd (32 s16 x s16 products). On CPUs without AVX-512 VNNI this returns 0.
#include "util/thread_pool.h"

namespace snapkv {

double peak_dot_macs(ThreadPool& pool, double seconds, int bits);

}  // namespace snapkv

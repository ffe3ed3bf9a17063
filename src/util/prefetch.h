#pragma once
// Prefetch instructions that the compiler keeps.
//
// GCC takes __builtin_prefetch for an instruction without side effects: a function that does
// nothing but prefetch is found "const", and a call to it whose result is unused is deleted as
// dead code. That is what happened to the K-quant decode kernels' prefetches, asked for through
// a lambda and two helper functions: GCC 12 at -O1 and above compiled none of them (engineering
// log, 2026-12-05). An `asm volatile` is never deleted, so on x86 these are written as one.
#include <cstdint>

namespace snapkv {

// The line holding p into L1 (prefetcht0).
inline void prefetch_l1(const void* p) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

// The line holding p into L2 (prefetcht1).
inline void prefetch_l2(const void* p) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

}  // namespace snapkv

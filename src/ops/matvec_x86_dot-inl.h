// The integer dot-product steps that the decode kernels of matvec_q8-inl.h and matvec_qk-inl.h
// share, and the AVX2 prefill GEMM (gemm_q8-inl.h), on 256-bit vectors: VNNI instructions where
// SNAPKV_Q8_VNNI is 1, their AVX2 equivalents where it is 0 or unset. Included inside each kernel
// file's target region and namespace, so no include guard, on purpose.

#if !SNAPKV_Q8_VNNI
// acc + v, in inline assembly: with the intrinsic, GCC 12 reassociates a kernel's chains of
// integer additions into trees, computes the products of a whole unrolled block first and spills
// most of them to the stack (2026-12-03's engineering log).
static inline __m256i AddI(__m256i acc, __m256i v) {
  asm("vpaddd %1, %0, %0" : "+x"(acc) : "x"(v));
  return acc;
}

// acc + v in 16-bit lanes, in inline assembly for the same reason.
static inline __m256i AddI16(__m256i acc, __m256i v) {
  asm("vpaddw %1, %0, %0" : "+x"(acc) : "x"(v));
  return acc;
}
#endif

// acc plus, per group of 4 bytes, the sum of a[i] (unsigned) * b[i] (signed): 8 int32 lanes.
static inline __m256i DotAdd(__m256i acc, __m256i a, __m256i b) {
#if SNAPKV_Q8_VNNI
  return _mm256_dpbusd_epi32(acc, a, b);
#else
  // vpmaddubsw saturates its 16-bit pair sums; |a| <= 128 and |b| <= 127 keep them below 2^15.
  return AddI(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
#endif
}

#if !SNAPKV_Q8_VNNI
// The 16-bit pair sums of a1 * b1 plus those of a2 * b2 (vpmaddubsw; a unsigned, b signed), for
// operands whose 4 * |a| * |b| stays below 2^15.
static inline __m256i PairSums2(__m256i a1, __m256i b1, __m256i a2, __m256i b2) {
  return _mm256_add_epi16(_mm256_maddubs_epi16(a1, b1), _mm256_maddubs_epi16(a2, b2));
}

// acc plus 16-bit pair sums, widened: per 32-bit lane, the sum of its two halves.
static inline __m256i Widen(__m256i acc, __m256i pairs) {
  return AddI(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// How many PairSums2 in a row AVX2 adds in 16-bit lanes before widening them, where each of
// vpmaddubsw's pair sums is at most 2 * max_a * max_b in magnitude: as many as stay below 2^15,
// at most max_run (the sum's length). One vpmaddwd and vpaddd per run instead of per PairSums2:
// on CPUs that run 256-bit instructions as two halves (the first Zen generation) the decode
// kernels are bound by their instructions, not by memory.
constexpr int PairSumsRun(int max_a, int max_b, int max_run) {
  const int n = 32767 / (4 * max_a * max_b);
  return n < max_run ? n : max_run;
}

// pairs (PairSums2 number i of a sum) joins the run pending in p; a run of kRun ends widened into
// s. With kRun dividing the sum's length, the sum ends widened.
template <int kRun>
static inline void AddToRun(__m256i& s, __m256i& p, __m256i pairs, int i) {
  static_assert(kRun >= 1);
  if constexpr (kRun == 1) {
    s = Widen(s, pairs);
  } else {
    p = i % kRun == 0 ? pairs : AddI16(p, pairs);
    if (i % kRun == kRun - 1) s = Widen(s, p);
  }
}
#endif

// acc + DotAdd(0, a1, b1) + DotAdd(0, a2, b2), for operands whose products keep 4 * |a| * |b|
// below 2^15 (4-bit codes by signed bytes: 4 * 15 * 128; 6-bit ones: 4 * 63 * 128): AVX2 adds the
// 16-bit pair sums of the two before widening them, one vpmaddwd and vpaddd fewer.
static inline __m256i DotAdd2(__m256i acc, __m256i a1, __m256i b1, __m256i a2, __m256i b2) {
#if SNAPKV_Q8_VNNI
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(acc, a1, b1), a2, b2);
#else
  return Widen(acc, PairSums2(a1, b1, a2, b2));
#endif
}

// s plus a1 * b1 + a2 * b2 (a unsigned, at most kMaxA; b signed, at most kMaxB in magnitude) as
// pair i of a sum of kMaxRun pairs. VNNI: DotAdd2. AVX2: runs of 16-bit pair sums pending in p
// (PairSumsRun, at least one pair: 4 * kMaxA * kMaxB below 2^15; kMaxRun a multiple of the run,
// so that the sum ends widened).
template <int kMaxA, int kMaxB, int kMaxRun>
static inline void DotAddRun(__m256i& s, __m256i& p, __m256i a1, __m256i b1, __m256i a2, __m256i b2, int i) {
#if SNAPKV_Q8_VNNI
  s = DotAdd2(s, a1, b1, a2, b2);
#else
  constexpr int kRun = PairSumsRun(kMaxA, kMaxB, kMaxRun);
  static_assert(kRun >= 1 && kMaxRun % kRun == 0);
  AddToRun<kRun>(s, p, PairSums2(a1, b1, a2, b2), i);
#endif
}

// acc plus, per 32-bit lane, the sum of the products of its two signed 16-bit halves in a and b.
static inline __m256i DotAdd16(__m256i acc, __m256i a, __m256i b) {
#if SNAPKV_Q8_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return AddI(acc, _mm256_madd_epi16(a, b));
#endif
}

// The 4 bytes at p in every 32-bit lane.
static inline __m256i Broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

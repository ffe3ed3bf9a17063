#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and fuzzes each for N seconds (default 600),
# starting from the committed corpus. New inputs go to fuzz-out/; to keep a useful one, merge it:
#   build/fuzz/tests/fuzz/fuzz_gguf -merge=1 tests/fuzz/corpus/gguf fuzz-out/gguf
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
targets=${FUZZ_TARGETS:-$(basename -s .cpp -a tests/fuzz/fuzz_*.cpp | sed 's/^fuzz_//')}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)"
for t in $targets; do
  mkdir -p "fuzz-out/$t"
  echo "fuzz: $t for $seconds s"
  SNAPKV_SOURCE_DIR=$PWD "build/fuzz/tests/fuzz/fuzz_$t" "fuzz-out/$t" "tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    2>&1 | tail -n 12
done

#!/usr/bin/env bash
# Native llama.cpp tools (llama-bench, llama-quantize, llama-server, llama-cli), the peer of the
# speed comparison (docs/performance.md). The source is the llama.cpp that llama-cpp-python vendors,
# so the native peer and the llama-cpp-python contender of the other benches are the same code.
# Built for this CPU (GGML_NATIVE; without AMX where the CPU has it, see below), OpenMP as llama.cpp
# defaults, statically linked so the cached binaries do not depend on the build tree. Not part of
# CI: the first run takes 10+ minutes on 2 cores.
#
#   bash scripts/build_llamacpp.sh            # prints the bin dir on its last line
#
# Environment:
#   SNAPKV_LLAMACPP_DIR   cache root (default $HOME/.cache/snapkv/llamacpp-0.3.36); binaries in bin/,
#                         the llama.cpp commit in bin/VERSION
#   JOBS                  parallel compile jobs (default 2)
#   SNAPKV_LLAMACPP_CLI   0 to skip llama-cli (it is built by default; it shares almost all objects)
set -euo pipefail

VERSION=0.3.36
ROOT="${SNAPKV_LLAMACPP_DIR:-$HOME/.cache/snapkv/llamacpp-$VERSION}"
BIN="$ROOT/bin"
JOBS="${JOBS:-2}"
TOOLS=(llama-bench llama-quantize llama-server)
if [ "${SNAPKV_LLAMACPP_CLI:-1}" != 0 ]; then TOOLS+=(llama-cli); fi

have_all() {
  local t
  for t in "${TOOLS[@]}"; do [ -x "$BIN/$t" ] || return 1; done
  [ -f "$BIN/VERSION" ]
}

if have_all; then
  echo "llama.cpp tools already built: $(cat "$BIN/VERSION")" >&2
  echo "$BIN"
  exit 0
fi

for cmd in cmake g++ python3 tar; do
  if ! command -v "$cmd" >/dev/null; then
    echo "build_llamacpp.sh: '$cmd' is missing; scripts/install_deps.sh installs the build tools" >&2
    exit 1
  fi
done
GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi

SRC_ROOT="$ROOT/src"
SDIST="$SRC_ROOT/llama_cpp_python-$VERSION.tar.gz"
TREE="$SRC_ROOT/llama_cpp_python-$VERSION"
mkdir -p "$SRC_ROOT" "$BIN"
if [ ! -f "$SDIST" ]; then
  # a temporary venv-free pip call: only the source archive is fetched, nothing is installed
  python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$SRC_ROOT"
fi
if [ ! -f "$TREE/vendor/llama.cpp/CMakeLists.txt" ]; then
  tar -xzf "$SDIST" -C "$SRC_ROOT"
fi

# The sdist carries the submodule's git metadata but not its objects, so llama.cpp's own build-info
# cannot ask git; the checked-out commit is read from the submodule HEAD and passed in, so that
# llama-bench's JSON (build_commit) names the peer build.
COMMIT="$(cat "$TREE/.git/modules/vendor/llama.cpp/HEAD" 2>/dev/null || echo unknown)"
SHORT="${COMMIT:0:7}"
LLAMA_VERSION="$(sed -n 's/^set(LLAMA_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)).*/\2/p' \
  "$TREE/vendor/llama.cpp/CMakeLists.txt" | paste -sd.)"

# For this CPU, except AMX: llama.cpp's AMX matmul crashes on the Xeon VMs here (SIGSEGV in
# ggml_backend_amx_mul_mat on the first batch), so where the CPU has AMX its other instruction sets
# are named one by one instead of -march=native.
ARCH=(-DGGML_NATIVE=ON)
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  has() { if grep -qw "$1" /proc/cpuinfo; then echo ON; else echo OFF; fi; }
  ARCH=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON
    -DGGML_AVX512=ON "-DGGML_AVX512_VBMI=$(has avx512vbmi)" "-DGGML_AVX512_VNNI=$(has avx512_vnni)"
    "-DGGML_AVX512_BF16=$(has avx512_bf16)" "-DGGML_AVX_VNNI=$(has avx_vnni)"
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
fi

BUILD="$ROOT/build"
cmake -S "$TREE/vendor/llama.cpp" -B "$BUILD" "${GENERATOR[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  "${ARCH[@]}" \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_COMMIT="$SHORT" -DLLAMA_BUILD_NUMBER=0 \
  >"$ROOT/configure.log" 2>&1 || { tail -40 "$ROOT/configure.log" >&2; echo "configure failed: $ROOT/configure.log" >&2; exit 1; }
cmake --build "$BUILD" --config Release -j "$JOBS" --target "${TOOLS[@]}"

for t in "${TOOLS[@]}"; do
  src="$(find "$BUILD" -type f -name "$t" -perm -u+x | head -1)"
  if [ -z "$src" ]; then
    echo "build_llamacpp.sh: $t was not produced under $BUILD" >&2
    exit 1
  fi
  install -m 755 "$src" "$BIN/$t"
done
echo "llama.cpp $LLAMA_VERSION commit $COMMIT (llama-cpp-python $VERSION vendor/llama.cpp; ${ARCH[*]})" >"$BIN/VERSION"
echo "built: $(cat "$BIN/VERSION")" >&2
echo "$BIN"

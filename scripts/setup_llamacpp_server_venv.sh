#!/usr/bin/env bash
# A throw-away venv with llama-cpp-python's OpenAI-compatible server, the optional llama-cpp-python
# contender of bench/scripts/bench_server.py (its peer by default is native llama-server). pip builds llama.cpp from source for this CPU (several minutes; needs a
# C++ compiler and cmake: scripts/install_deps.sh has them).
#
#   bash scripts/setup_llamacpp_server_venv.sh [VENV]     # default: tools/reference/.venv-llamacpp-server
#   python3 bench/scripts/bench_server.py --contenders snapkv-full,snapkv-C,llama-server,llama-cpp-python \
#       --llama-python tools/reference/.venv-llamacpp-server/bin/python
#
# An existing venv that already has llama-cpp-python 0.3.36 (e.g. tools/reference/.venv) only needs
# the server's pure-Python dependencies: pass it as VENV and nothing is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-tools/reference/.venv-llamacpp-server}"
VERSION=0.3.36

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
if "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$VERSION')" 2>/dev/null; then
  # the [server] extra of llama-cpp-python 0.3.36, without touching the built package
  "$VENV/bin/python" -m pip install --quiet 'uvicorn>=0.22.0' 'fastapi>=0.100.0' 'pydantic-settings>=2.0.1' \
    'sse-starlette>=1.6.1' 'starlette-context>=0.3.6,<0.4' 'PyYAML>=5.1'
else
  # CPU-only build for this machine (llama.cpp's default GGML_NATIVE), as tools/reference/setup_venv.sh
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
  "$VENV/bin/python" -m pip install --quiet --no-binary llama-cpp-python "llama-cpp-python[server]==$VERSION"
fi
"$VENV/bin/python" -c "import llama_cpp, llama_cpp.server.app; print('llama-cpp-python', llama_cpp.__version__, 'server ok')"
echo "use: python3 bench/scripts/bench_server.py --contenders snapkv-full,snapkv-C,llama-server,llama-cpp-python --llama-python $VENV/bin/python"

#!/usr/bin/env bash
# Creates tools/reference/.venv with the pinned reference implementations
# (HF transformers + llama-cpp-python). Only used to (re)generate the JSON
# fixtures under tests/fixtures/; CI never runs this.
#
# Usage: tools/reference/setup_venv.sh [PYTHON]
# Takes a while: torch is a large download, and llama-cpp-python compiles
# llama.cpp from source (several minutes on 2 cores).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${1:-python3}"
venv="$here/.venv"

if [[ ! -x "$venv/bin/python" ]]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --upgrade pip wheel setuptools

# torch, transformers, gguf, ... (the default PyPI torch wheel; it is used on CPU only)
"$venv/bin/python" -m pip install -r "$here/requirements.txt"

# llama-cpp-python: CPU-only build of the bundled llama.cpp.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
"$venv/bin/python" -m pip install --no-binary llama-cpp-python -r "$here/requirements-llamacpp.txt"

"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for p in ["numpy", "torch", "transformers", "accelerate", "tokenizers", "gguf", "sentencepiece", "protobuf", "llama-cpp-python"]:
    try:
        print(f"{p}=={md.version(p)}")
    except md.PackageNotFoundError:
        print(f"{p}: not installed")
PY

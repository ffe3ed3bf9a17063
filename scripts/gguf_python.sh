#!/usr/bin/env bash
# Runs a Python script of this folder in the venv with numpy and the gguf package from PyPI (made on
# first use in tools/reference/.venv-gguf, which git ignores):
#   bash scripts/gguf_python.sh scripts/make_layer_draft.py --help
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SNAPKV_GGUF_VENV:-tools/reference/.venv-gguf}"
if ! "$VENV/bin/python" -c "import numpy, gguf" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet numpy 'gguf>=0.17'
fi
exec "$VENV/bin/python" "$@"

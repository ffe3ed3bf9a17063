#!/usr/bin/env bash
# Creates tools/reference/.venv-kvpress (git-ignored) with NVIDIA kvpress and the transformers
# version it supports. Only used to (re)generate tests/fixtures/press_selections.json with
# make_press_fixture.py; CI never runs this.
#
# Usage: tools/reference/setup_kvpress_venv.sh [PYTHON]
# torch comes from PyPI (default wheel, used on CPU only) and is a large download; pip's cache
# (~/.cache/pip) is reused when it holds the wheels already. kvpress also pulls datasets, pandas
# and peft, which the fixture script does not use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${1:-python3}"
venv="$here/.venv-kvpress"

if [[ ! -x "$venv/bin/python" ]]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --upgrade pip wheel setuptools
"$venv/bin/python" -m pip install -r "$here/requirements-kvpress.txt"

"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for p in ["kvpress", "torch", "transformers", "accelerate", "tokenizers", "gguf", "numpy", "huggingface-hub"]:
    try:
        print(f"{p}=={md.version(p)}")
    except md.PackageNotFoundError:
        print(f"{p}: not installed")
PY

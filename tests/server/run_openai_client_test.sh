#!/usr/bin/env bash
# Runs openai_client_test.py against `snapkv serve` with the official `openai` package, installed
# into a throw-away venv (build/venv-openai, reused when it already has the pinned version).
# Usage: tests/server/run_openai_client_test.sh SNAPKV_BINARY MODEL_PATH
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 SNAPKV_BINARY MODEL_PATH" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
binary="$(realpath "$1")"
model="$(realpath "$2")"
openai_pin="openai==3.54.0"
venv="${SNAPKV_OPENAI_VENV:-$root/build/venv-openai}"

if ! "$venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '${openai_pin#openai==}')" 2>/dev/null; then
  echo "setting up $venv ($openai_pin)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$openai_pin"
fi
exec "$venv/bin/python" "$here/openai_client_test.py" "$binary" "$model"

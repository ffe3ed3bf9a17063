#!/usr/bin/env bash
# Creates tools/reference/.venv-metrics (git-ignored) with pltrdy `rouge` 1.0.1, the ROUGE that
# LongBench's metrics.py imports. Only used to (re)generate tests/fixtures/metrics_rouge_l.json
# with make_metrics_fixture.py; CI never runs this. Small and quick (rouge depends only on six).
#
# Usage: tools/reference/setup_metrics_venv.sh [PYTHON]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${1:-python3}"
venv="$here/.venv-metrics"

if [[ ! -x "$venv/bin/python" ]]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install "rouge==1.0.1"

"$venv/bin/python" - <<'PY'
import importlib.metadata as md
import platform
print(f"python=={platform.python_version()}")
for p in ["rouge", "six"]:
    print(f"{p}=={md.version(p)}")
PY

#!/usr/bin/env bash
# Sets up (deps, model, build) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --preset release -j"$(nproc)"

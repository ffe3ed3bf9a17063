#!/usr/bin/env bash
# Everything a fresh clone needs: Debian packages, the models (the default and Gemma-3-270M), a Release build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/download_model.sh
bash scripts/download_model.sh gemma3
bash scripts/download_vocab.sh
bash scripts/build.sh release

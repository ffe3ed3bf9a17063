#!/usr/bin/env bash
# Runs scripts/make_bench_models.py in the gguf venv (scripts/gguf_python.sh). Arguments go to the
# script; see
#   bash scripts/make_bench_models.sh --help
exec bash "$(dirname "$0")/gguf_python.sh" scripts/make_bench_models.py "$@"

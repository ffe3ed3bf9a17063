#!/usr/bin/env bash
# The evaluation runs behind docs/evaluation.md's results: every suite, full cache and six presses
# at four capacities, on the default model, into results/<suite>/: <suite>.jsonl.gz (one line per
# answer), <suite>.md and the plots (resumable: re-running skips what is in the .jsonl.gz, so a run
# stopped part way goes on where it stopped). Full size: RULER 2 cases per task and length, the
# needle grid, LongChat's 100 LongEval cases that fit plus a 4 x 5 generated grid, every L-Eval
# question that fits, all 200 LongBench multi_news cases.
# Usage: bash scripts/eval_results.sh [suite ...]   (default: all, in the order below)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/release/snapkv
[ -x "$bin" ] || bash scripts/build.sh
threads=${THREADS:-2}
run() { local suite=$1; shift; echo "== $suite: $*" >&2; "$bin" eval "$suite" -t "$threads" --out "results/$suite" "$@"; }
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(ruler longeval_lines leval longbench niah)
for s in "${suites[@]}"; do
  case $s in
    ruler) run ruler --lengths 2048,4096,8192 --limit 2 ;;
    longeval_lines) run longeval_lines --lengths 2048,4096,6144,8192 --positions 0,25,50,75,100 ;;
    leval) run leval ;;
    longbench) run longbench ;;
    niah) run niah --lengths 1024,2048,3072,4096,5120,6144,7168,8192 --depths 0,10,20,30,40,50,60,70,80,90,100 ;;
    *) echo "unknown suite $s" >&2; exit 2 ;;
  esac
done

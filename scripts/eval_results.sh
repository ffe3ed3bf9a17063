#!/usr/bin/env bash
# The evaluation runs behind docs/evaluation.md's results: every suite, full cache and six presses
# at four capacities, on the default model, into results/<suite>/: <suite>.jsonl.gz (one line per
# answer), <suite>.md and the plots (resumable: re-running skips what is in the .jsonl.gz, so a run
# stopped part way goes on where it stopped). Full size: RULER 2 cases per task and length, the
# needle grid, LongChat's 100 LongEval cases that fit plus a 4 x 5 generated grid, every L-Eval
# question that fits, all 200 LongBench multi_news cases. And, when models/gemma-3-270m-q4_k_m.gguf
# is there (scripts/download_model.sh gemma3), gemma3_fidelity: that base model cannot answer the
# suites' questions, so its pressed caches are compared with the full one on the essays at 8K, 16K
# and 32K tokens (snapkv eval fidelity) into results/gemma3_long/fidelity/.
# Usage: bash scripts/eval_results.sh [suite ...]   (default: all, in the order below)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/release/snapkv
[ -x "$bin" ] || bash scripts/build.sh
threads=${THREADS:-2}
run() { local suite=$1; shift; echo "== $suite: $*" >&2; "$bin" eval "$suite" -t "$threads" --out "results/$suite" "$@"; }
suites=("$@")
gemma=models/gemma-3-270m-q4_k_m.gguf
if [ ${#suites[@]} -eq 0 ]; then
  suites=(ruler longeval_lines leval longbench niah)
  if [ -f "$gemma" ]; then suites+=(gemma3_fidelity); else echo "== gemma3_fidelity: $gemma absent, skipped" >&2; fi
fi
for s in "${suites[@]}"; do
  case $s in
    ruler) run ruler --lengths 2048,4096,8192 --limit 2 ;;
    longeval_lines) run longeval_lines --lengths 2048,4096,6144,8192 --positions 0,25,50,75,100 ;;
    leval) run leval ;;
    longbench) run longbench ;;
    niah) run niah --lengths 1024,2048,3072,4096,5120,6144,7168,8192 --depths 0,10,20,30,40,50,60,70,80,90,100 ;;
    gemma3_fidelity)
      echo "== gemma3_fidelity" >&2
      "$bin" eval fidelity -m "$gemma" -t "$threads" --lengths 8192,16384,32000 --capacity 256,1024 \
        --presses full,snapkv,pyramidkv,ada_kv,streaming_llm,tova,knorm,random --out results/gemma3_long/fidelity ;;
    *) echo "unknown suite $s" >&2; exit 2 ;;
  esac
done

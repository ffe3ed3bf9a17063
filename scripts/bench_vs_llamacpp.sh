#!/usr/bin/env bash
# Issue 45's grid: snapkv against native llama.cpp (llama-bench) on the benchmark models, each case
# one `snapkv bench decode --llama-bench` run (the two engines alternating, same file, same threads).
# Needs the peer (scripts/build_llamacpp.sh), the models (scripts/make_bench_models.sh) and a release
# build. Writes results/bench_llamacpp/<model>/bench_llamacpp.{md,json} and a summary.md of all cases.
#
#   bash scripts/bench_vs_llamacpp.sh                     # the whole grid (hours on 2 cores)
#   CASES="1b:Q4_0" REPS=1 LENGTH=64 bash scripts/bench_vs_llamacpp.sh   # one short case
#   CASES="1b:Q4_K_M" REPS=3 LENGTH=16384 EXTRA="--capacities 1024 --llama-fa-prefill 1 \
#     --llama-fa-decode 0 --no-warmup" bash scripts/bench_vs_llamacpp.sh   # the 16K SnapKV case (~80 min)
#
# Environment (defaults in brackets):
#   CASES     shape:type list, default (the default model, SmolLM2-135M-Instruct Q4_1), or gemma3
#             (the real Gemma-3-270M Q4_K_M of scripts/download_model.sh gemma3)
#             [1b:Q4_K_M 1b:Q5_K_M 1b:Q6_K 1b:Q8_0 1b:Q4_0 8b:Q4_K_M, gemma3 where it was downloaded, default]
#   REPS      alternating repetitions per case [5]; REPS_8B for the 8b shape [3]
#   LENGTH    prompt length, prefilled and then decoded after [512]
#   N         decode steps [64]
#   THREADS   threads of both engines [2]
#   MODELS    the models' directory [$HOME/.cache/snapkv/bench-models]
#   LLAMA_BIN llama.cpp's bin directory [$SNAPKV_LLAMACPP_DIR/bin or $HOME/.cache/snapkv/llamacpp-0.3.36/bin]
#   SNAPKV    the snapkv binary [build/release/snapkv]
#   OUT       results directory [results/bench_llamacpp]
#   EXTRA     more flags for `snapkv bench decode` (e.g. --capacities 1024 with a long LENGTH)
set -euo pipefail
cd "$(dirname "$0")/.."

GEMMA3=models/gemma-3-270m-q4_k_m.gguf
DEFAULT=models/SmolLM2-135M-Instruct.Q4_1.gguf
CASES="${CASES:-1b:Q4_K_M 1b:Q5_K_M 1b:Q6_K 1b:Q8_0 1b:Q4_0 8b:Q4_K_M$([ -f "$GEMMA3" ] && echo " gemma3") default}"
REPS="${REPS:-5}"
REPS_8B="${REPS_8B:-3}"
LENGTH="${LENGTH:-512}"
N="${N:-64}"
THREADS="${THREADS:-2}"
MODELS="${MODELS:-$HOME/.cache/snapkv/bench-models}"
LLAMA_BIN="${LLAMA_BIN:-${SNAPKV_LLAMACPP_DIR:-$HOME/.cache/snapkv/llamacpp-0.3.36}/bin}"
SNAPKV="${SNAPKV:-build/release/snapkv}"
OUT="${OUT:-results/bench_llamacpp}"

die() { echo "bench_vs_llamacpp.sh: $*" >&2; exit 1; }
[ -x "$SNAPKV" ] || die "$SNAPKV: not built (cmake --preset release && cmake --build --preset release)"
[ -x "$LLAMA_BIN/llama-bench" ] || die "$LLAMA_BIN/llama-bench: missing (bash scripts/build_llamacpp.sh)"
# A case's model file and the name of its results folder.
model_of() {
  case "$1" in
    default) echo "$DEFAULT" ;;
    gemma3) echo "$GEMMA3" ;;
    *) echo "$MODELS/llama-${1%%:*}-${1#*:}.gguf" ;;
  esac
}
name_of() {
  case "$1" in
    default) echo SmolLM2-135M-Q4_1 ;;
    gemma3) echo gemma-3-270m-Q4_K_M ;;
    *) echo "llama-${1%%:*}-${1#*:}" ;;
  esac
}
for c in $CASES; do
  f=$(model_of "$c")
  [ -f "$f" ] || die "$f: missing (bash scripts/make_bench_models.sh --shapes ${c%%:*} --types ${c#*:}, scripts/download_model.sh gemma3, or scripts/setup.sh for the default model)"
done

mkdir -p "$OUT"
for c in $CASES; do
  reps="$REPS"
  if [ "${c%%:*}" = 8b ]; then reps="$REPS_8B"; fi
  name=$(name_of "$c")
  echo "== $name: prompt $LENGTH, $N decode steps, $reps repetitions, $THREADS threads" >&2
  # shellcheck disable=SC2086  # EXTRA is a list of flags
  "$SNAPKV" bench decode -m "$(model_of "$c")" --llama-bench "$LLAMA_BIN/llama-bench" -t "$THREADS" \
    --lengths "$LENGTH" -n "$N" --reps "$reps" --out "$OUT/$name" ${EXTRA:-}
done

# One table of every case in OUT (earlier runs included), from the JSON the runs wrote.
python3 - "$OUT" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = []
for f in sorted(out.glob("*/bench_llamacpp.json")):
    j = json.loads(f.read_text())
    peer = {(s["length"]): s for s in j["summary"] if s["contender"] == "llama.cpp"}
    for s in j["summary"]:
        if s["contender"] == "llama.cpp":
            continue
        r = lambda k: f'{s[k]["median"]:.2f}× ({s[k]["min"]:.2f}–{s[k]["max"]:.2f})'
        rows.append(f'| {f.parent.name} | {s["contender"]} | {s["length"]} | {r("prefill_ratio")} | {r("decode_ratio")} '
                    f'| {s["decode_over_bound"]:.2f} | {peer[s["length"]]["decode_over_bound"]:.2f} '
                    f'| {j["llama_build_commit"]} | {len({x["rep"] for x in j["runs"]})} |')
head = ("| model | ours | prompt | prefill, ours / llama.cpp | decode after the prompt, ours / llama.cpp "
        "| ours: decode / bound | llama.cpp: decode / bound | llama.cpp build | reps |\n"
        "|---|---|--:|--:|--:|--:|--:|---|--:|\n")
(out / "summary.md").write_text(head + "\n".join(rows) + "\n")
print(head + "\n".join(rows))
EOF
echo "wrote $OUT/summary.md" >&2

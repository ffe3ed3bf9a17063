#!/usr/bin/env bash
# Sets up, then answers a long-context question with the default model: a needle sentence hidden
# in the middle of Paul Graham essays (from the evaluation data), asked for at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
data=${SNAPKV_DATA:-../shared/data}
essays="$data/niah_paulgraham/PaulGrahamEssays"
[ -d "$essays" ] || { echo "demo: $essays not found (set SNAPKV_DATA to the evaluation data directory)" >&2; exit 1; }
prompt=$(mktemp --suffix=.txt)
trap 'rm -f "$prompt"' EXIT
python3 - "$essays" "$prompt" "${DEMO_CHARS:-14000}" <<'PY'
import pathlib, sys
essays, out, n_chars = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
text = "".join(p.read_text() for p in sorted(essays.glob("*.txt")))[:n_chars]
needle = " The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day."
cut = text.rfind(".", 0, len(text) // 2) + 1   # a sentence boundary near the middle
doc = text[:cut] + needle + text[cut:]
question = "What is the best thing to do in San Francisco? Answer in one sentence, using the document."
pathlib.Path(out).write_text(f"<document>\n{doc}\n</document>\n\n{question}")
PY
./build/release/snapkv run --chat -f "$prompt" -n 48 --kv-press snapkv --kv-capacity 1024 "$@"

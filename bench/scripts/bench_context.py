#!/usr/bin/env python3
"""Compress once, ask many: what a saved context buys on one machine, side by side.

For one ~7K-token document (the demo's needle haystack, longer) and one question, alternating over
--reps rounds:
  - time to the first token of the question from scratch (`snapkv run -f doc --question`: the
    prefill of document and question) and from a context file (`snapkv run --context`: the load and
    the question's prefill), for the whole cache and for SnapKV at --capacity (whole file pressed at
    the question, and file pressed when saved);
  - bytes on disk of both context files, and of llama.cpp's state file for the same prompt (native
    llama-server's slot save, which is llama_state_seq_save_file), at the same KV type (f16).
Model load time is left out of every figure. Writes --out (JSON) and prints a Markdown table.

  python3 bench/scripts/bench_context.py --reps 3 --out results/context_reuse.json
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is the best thing to do in San Francisco? Answer in one sentence, using the document."
NEEDLE = " The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day."


def document(data: Path, n_chars: int) -> str:
    essays = data / "niah_paulgraham" / "PaulGrahamEssays"
    text = "".join(p.read_text() for p in sorted(essays.glob("*.txt")))[:n_chars]
    cut = text.rfind(".", 0, len(text) // 2) + 1
    return f"<document>\n{text[:cut]}{NEEDLE}{text[cut:]}\n</document>"


def snapkv(args, *argv) -> str:
    cmd = [args.snapkv, *argv, "-m", args.model, "-t", str(args.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return r.stderr


def number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"no match for {pattern!r} in:\n{text}")
    return float(m.group(1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body: dict, timeout: float = 900) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def llama_state_bytes(args, doc_path: Path, workdir: Path) -> dict:
    """llama.cpp's state file for the same chat prompt (the document as a user turn), f16 KV."""
    port = free_port()
    slots = workdir / "slots"
    slots.mkdir()
    srv = subprocess.Popen([args.llama_server, "-m", args.model, "--port", str(port), "-t", str(args.threads),
                            "--ctx-size", "8192", "--parallel", "1", "--slot-save-path", str(slots), "--no-webui"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        content = doc_path.read_text() + "\n\n" + QUESTION
        r = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": content}], "max_tokens": 1,
                                                "temperature": 0})
        saved = post(port, "/slots/0?action=save", {"filename": "doc.bin"})
        return {"prompt_tokens": r["usage"]["prompt_tokens"], "bytes": (slots / "doc.bin").stat().st_size,
                "n_saved": saved.get("n_saved")}
    finally:
        srv.terminate()
        srv.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapkv", default=str(ROOT / "build/release/snapkv"))
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--data", default=os.environ.get("SNAPKV_DATA", str(ROOT.parent / "shared/data")))
    ap.add_argument("--chars", type=int, default=28000, help="document length in characters (28000: ~6.7K tokens)")
    ap.add_argument("--capacity", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--llama-server", default=str(Path.home() / ".cache/snapkv/llamacpp-0.3.36/bin/llama-server"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="snapkv_bench_context_"))
    doc = work / "doc.txt"
    doc.write_text(document(Path(args.data), args.chars))
    press = ["--kv-press", "snapkv", "--kv-capacity", str(args.capacity)]
    q = ["--question", QUESTION, "-n", "1"]
    cases = {
        "full": (["--kv-press", "full"], "whole.snapkv", []),
        f"snapkv C={args.capacity}, whole file pressed at the question": (press, "whole.snapkv", press),
        f"snapkv C={args.capacity}, file pressed when saved": (press, "pressed.snapkv", []),
    }
    rows = {name: {"scratch_s": [], "context_s": []} for name in cases}
    files = {}
    for rep in range(args.reps):
        for name, flags in [("whole.snapkv", ["--kv-press", "full"]), ("pressed.snapkv", press)]:
            err = snapkv(args, "compress", "--chat", "-f", str(doc), "-o", str(work / name), *flags)
            files[name] = {"bytes": (work / name).stat().st_size, "tokens": int(number(r": (\d+) tokens", err)),
                           "prefill_s": number(r"prefill ([\d.]+) s", err)}
        for name, (scratch_flags, file, context_flags) in cases.items():
            err = snapkv(args, "run", "--chat", "-f", str(doc), *q, *scratch_flags)
            rows[name]["scratch_s"].append(number(r"prefill [\d.]+ tok/s \(([\d.]+) s\)", err))
            err = snapkv(args, "run", "--context", str(work / file), *q, *context_flags)
            rows[name]["context_s"].append(number(r"first token after ([\d.]+) s", err))
        print(f"round {rep + 1}/{args.reps}: " + json.dumps(rows), file=sys.stderr)
    llama = llama_state_bytes(args, doc, work) if Path(args.llama_server).exists() else None

    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"\n| case | first token from scratch, s | from the context file, s | speed-up (min–max) |")
    print("|---|--:|--:|--:|")
    for name, r in rows.items():
        ratios = [a / b for a, b in zip(r["scratch_s"], r["context_s"])]
        r["speedup_median"], r["speedup_min"], r["speedup_max"] = med(ratios), min(ratios), max(ratios)
        print(f"| {name} | {med(r['scratch_s']):.2f} | {med(r['context_s']):.3f} | "
              f"{med(ratios):.0f}× ({min(ratios):.0f}–{max(ratios):.0f}) |")
    mib = lambda b: b / 2**20
    print(f"\n| file | tokens | bytes on disk |\n|---|--:|--:|")
    print(f"| whole cache | {files['whole.snapkv']['tokens']} | {mib(files['whole.snapkv']['bytes']):.1f} MiB |")
    print(f"| SnapKV C={args.capacity} | {files['pressed.snapkv']['tokens']} | "
          f"{mib(files['pressed.snapkv']['bytes']):.1f} MiB |")
    if llama:
        print(f"| llama.cpp state file (llama-server slot save) | {llama['prompt_tokens']} | "
              f"{mib(llama['bytes']):.1f} MiB ({llama['bytes'] / files['pressed.snapkv']['bytes']:.1f}× SnapKV's) |")
    if args.out:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "ttft": rows,
                                        "files": files, "llama_state": llama}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

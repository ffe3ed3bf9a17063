#!/usr/bin/env python3
"""Two snapkv builds' decode speed, alternating, each pair classed by the machine's phase.

  bench/scripts/ab_decode.py OLD_SNAPKV NEW_SNAPKV --pairs 80 -- -p "Write a story." -n 300 -t 2

Runs `snapkv run ARGS` with each binary in turn (the order flips every pair), reads the
"decode N tok/s" of each, and before every pair `NEW_SNAPKV bench phase` (bandwidth and the
threads' round trip). The VMs here switch between phases that move decode by tens of per cent
(README, Speed), so only pairs taken side by side compare the two builds, and a class of pairs
is reported on its own: "near" when the round trip is under --far-ns, "far" otherwise.
Prints one line per run, then per class the pairs, median tok/s of each build, the median of
new / old and in how many pairs the new build was faster.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def decode_tok_s(binary, args):
    out = subprocess.run([binary, "run", *args], capture_output=True, text=True)
    m = re.search(r"decode ([0-9.]+) tok/s", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"{binary} run failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return float(m.group(1))


def phase(binary, thread_args):
    out = subprocess.run([binary, "bench", "phase", *thread_args], capture_output=True, text=True)
    m = re.search(r"bandwidth ([0-9.]+) GB/s \| round trip (?:([0-9]+) ns|-)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"{binary} bench phase failed (exit {out.returncode}): {out.stdout}{out.stderr}")
    return float(m.group(1)), float(m.group(2)) if m.group(2) else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--far-ns", type=float, default=150, help="round trip from which a pair counts as 'far'")
    argv = sys.argv[1:]
    if "--" not in argv:
        ap.error("give the arguments of `snapkv run` after --")
    o = ap.parse_args(argv[:argv.index("--")])
    args = argv[argv.index("--") + 1:]
    for binary in (o.old, o.new):
        if not os.access(binary, os.X_OK):
            ap.error(f"{binary} is not an executable file")
    # bench phase on as many threads as the runs
    thread_args = next((["-t", args[i + 1]] for i, a in enumerate(args[:-1]) if a in ("-t", "--threads")), [])
    pairs = []
    for i in range(o.pairs):
        bw, trip = phase(o.new, thread_args)
        order = ["new", "old"] if i % 2 == 0 else ["old", "new"]
        got = {}
        for which in order:
            got[which] = decode_tok_s(o.new if which == "new" else o.old, args)
            print(f"{bw:.1f} GB/s {trip:.0f} ns {which} {got[which]:.1f} tok/s", flush=True)
        pairs.append((trip, got["old"], got["new"]))
    for name, keep in (("near", lambda t: t < o.far_ns), ("far", lambda t: t >= o.far_ns), ("all", lambda t: True)):
        cls = [p for p in pairs if keep(p[0])]
        if not cls:
            continue
        ratios = [n / old for _, old, n in cls]
        print(f"{name}: {len(cls)} pairs, old {statistics.median(p[1] for p in cls):.1f} tok/s, "
              f"new {statistics.median(p[2] for p in cls):.1f} tok/s, new / old {statistics.median(ratios):.3f}, "
              f"new faster in {sum(r > 1 for r in ratios)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Greedy continuations of snapkv and llama.cpp on the architecture fixture's models, quantized.

A measurement, not a fixture: make_arch_fixture.py's models (F32, with their vocabularies) are
written to --out, quantized by llama.cpp's own llama-quantize, and each engine continues the same
essay prompt greedily (snapkv `run`, llama-cpp-python 0.3.36 in tools/reference/.venv). Prints, per
model and type, how many generated tokens agree before the first difference and llama.cpp's
top-1/top-2 margin there (a small margin is a near-tie, where rounding decides).

    tools/reference/.venv/bin/python tools/reference/measure_arch_quantized.py \
        --quantize ~/.cache/snapkv/llamacpp-0.3.36/bin/llama-quantize --snapkv build/release/snapkv
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_arch_fixture as fx  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quantize", type=Path, required=True, help="llama.cpp's llama-quantize")
    ap.add_argument("--snapkv", type=Path, default=fx.REPO / "build" / "release" / "snapkv")
    ap.add_argument("--types", default="Q8_0,Q4_0")
    ap.add_argument("--n-prompt", type=int, default=96, help="prompt tokens (the essay's first)")
    ap.add_argument("-n", type=int, default=32, help="tokens generated")
    ap.add_argument("--activations", default="q16", help="snapkv's --decode-activations (q16, q8, f32)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/snapkv-arch-quantized"))
    args = ap.parse_args()

    import gguf
    from llama_cpp import Llama

    args.out.mkdir(parents=True, exist_ok=True)
    text = (fx.ESSAYS / sorted(os.listdir(fx.ESSAYS))[0]).read_text(encoding="utf-8")
    for spec in fx.ARCHS:
        n_vocab = len(gguf.GGUFReader(str(fx.VOCAB / spec["vocab"])).fields["tokenizer.ggml.tokens"].data)
        meta, tensors = fx.describe(spec, n_vocab)
        f32 = args.out / f"{spec['name']}-F32.gguf"
        fx.write_gguf(f32, spec, meta, tensors, {t["name"]: fx.tensor_values(t) for t in tensors})
        for qtype in args.types.split(","):
            path = args.out / f"{spec['name']}-{qtype}.gguf"
            subprocess.run([str(args.quantize), str(f32), str(path), qtype], check=True, capture_output=True)
            llm = Llama(model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False)
            ids = llm.tokenize(text.encode(), add_bos=False, special=False)[: args.n_prompt]
            prompt = llm.detokenize(ids).decode("utf-8", errors="replace")
            ids = llm.tokenize(prompt.encode(), add_bos=True, special=False)
            llm.reset()
            llm.eval(ids)
            cpp, margins = [], []
            for _ in range(args.n):
                row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                top2 = np.argsort(-row)[:2]
                margins.append(float(row[top2[0]] - row[top2[1]]))
                cpp.append(int(top2[0]))
                llm.eval([cpp[-1]])
            ours_text = subprocess.run([str(args.snapkv), "run", "-m", str(path), "-p", prompt, "-n", str(args.n),
                                        "--decode-activations", args.activations],
                                       check=True, capture_output=True).stdout.decode("utf-8", errors="replace")
            # The longest run of llama.cpp's tokens whose text begins snapkv's (texts, since a
            # detokenized continuation need not tokenize back to the same ids).
            ours_text = ours_text.rstrip("\n").lstrip()
            same = 0
            while same < len(cpp) and ours_text.startswith(
                    llm.detokenize(cpp[: same + 1]).decode("utf-8", errors="replace").lstrip()):
                same += 1
            at = f", llama.cpp's margin there {margins[same]:.3g}" if same < len(cpp) else ""
            print(f"{spec['name']:<11} {qtype:<6} prompt {len(ids)} tok: {same}/{len(cpp)} greedy tokens agree{at}",
                  flush=True)
            del llm
    return 0


if __name__ == "__main__":
    sys.exit(main())

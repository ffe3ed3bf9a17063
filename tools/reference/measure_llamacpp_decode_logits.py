#!/usr/bin/env python3
"""How far llama.cpp's decode logits are from transformers' (the bounds of the q8 decode test).

llama.cpp rounds activations to 8 bits for its quantized dot products, as our
--decode-activations q8 does. This feeds the first 400 tokens of the essay in
tests/fixtures/logits_transformers.json to llama.cpp (llama-cpp-python, same GGUF,
2 threads), one token per eval as decode does, and compares each position's logits
for transformers' top-5 ids with the fixture's: mean, p99 and max |difference|, and
top-1 agreement. ReferenceLogits.Q8DecodeIsAsCloseToTransformersAsLlamaCpp quotes
the numbers and sets its bounds from them. Prints only; writes nothing.

    tools/reference/.venv/bin/python tools/reference/measure_llamacpp_decode_logits.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parents[2]
N = 400


def main() -> None:
    fx = json.loads((ROOT / "tests/fixtures/logits_transformers.json").read_text())
    ids, positions = fx["input_ids"][:N], fx["positions"]
    model = Llama(model_path=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"), n_ctx=1024, n_threads=2,
                  logits_all=True, verbose=False)
    diffs, agree = [], 0
    for i, token in enumerate(ids):
        model.eval([token])
        row = np.asarray(model.scores[i])
        diffs += [abs(row[t] - v) for t, v in zip(positions[i]["top5_ids"], positions[i]["top5_logits"])]
        agree += int(np.argmax(row)) == positions[i]["argmax"]
    d = np.sort(np.asarray(diffs))
    print(f"llama.cpp decode, {N} positions: |logit diff| mean {d.mean():.4f}, p99 {d[len(d) * 99 // 100]:.4f}, "
          f"max {d.max():.4f}; top-1 {agree}/{N}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Report (no fixture written) how well HF transformers reproduces the llama.cpp greedy fixture.

For each case of tests/fixtures/greedy_llamacpp.json: (1) teacher-forced, the share of
generated steps where transformers' argmax equals llama.cpp's token, and (2) free-running
greedy with transformers, the index of the first token that differs. Near-ties (small
llama.cpp margins) explain most differences. Run inside tools/reference/.venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent.parent
MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> int:
    from transformers import AutoModelForCausalLM

    fx = json.loads((REPO / "tests" / "fixtures" / "greedy_llamacpp.json").read_text(encoding="utf-8"))
    model = AutoModelForCausalLM.from_pretrained(
        str(MODEL.parent), gguf_file=MODEL.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    tot_ok = tot = 0
    for case in fx["cases"]:
        p, g = case["prompt_ids"], case["generated_ids"]
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([p + g]), use_cache=False).logits[0]
            tf = logits[len(p) - 1 : len(p) + len(g) - 1].argmax(-1).tolist()
            # free-running greedy with the KV cache, not stopping at EOS
            out = model(input_ids=torch.tensor([p]), use_cache=True)
            free = []
            for _ in range(len(g)):
                nxt = int(out.logits[0, -1].argmax())
                free.append(nxt)
                out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
        ok = sum(a == b for a, b in zip(tf, g))
        tot_ok += ok
        tot += len(g)
        first = next((i for i, (a, b) in enumerate(zip(free, g)) if a != b), None)
        margin = case["margins"][first] if first is not None else None
        print(f"{case['name']:32s} teacher-forced argmax agreement {ok}/{len(g)}; "
              f"free-running first divergence at {first} (llama.cpp margin there {margin})")
    print(f"overall teacher-forced agreement {tot_ok}/{tot} = {tot_ok / tot:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

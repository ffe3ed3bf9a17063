#!/usr/bin/env python3
"""Reference answers to LongChat's LongEval "lines" cases from HF transformers, full cache.

Writes tests/fixtures/longeval_transformers.json. Run inside tools/reference/.venv:

    tools/reference/.venv/bin/python tools/reference/make_longeval_fixture.py   # ~12 min on 2 cores (eight 4.4K-token prompts)

For the first --cases records of longeval_lines/testcases/200_lines.jsonl in the evaluation
data: the record's prompt, verbatim, is the user message of the model's chat template (the GGUF's,
rendered by transformers' apply_chat_template with the generation prompt), tokenized by the
tokenizer transformers builds from the GGUF. The model (GGUF dequantized to fp32, eager
attention) answers greedily, free-running with its KV cache, at most MAX_TOKENS tokens; the
answer ends at the end-of-turn token, or at a newline once it has text (snapkv's LongEval
rule: a number needs a few tokens). Scored as LongChat's longeval/utils.py does: the last run
of digits, -1 if none, right iff it equals expected_number.

Each case records the prompt's length and FNV-1a hash (64-bit, over the ids as little-endian
int32: what snapkv writes as input_hash), the answer's token ids and, per step, the margin
between the top two logits, so a test can tell a real difference from a near-tie.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import sha256_file, sig, versions, write_fixture  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SHARED = Path(os.environ.get("SNAPKV_SHARED", REPO.parent / "shared"))
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CASES = SHARED / "data" / "longeval_lines" / "testcases" / "200_lines.jsonl"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "longeval_transformers.json"
MAX_TOKENS = 32


def fnv1a_ids(ids: list[int]) -> str:
    h = 14695981039346656037
    for i in ids:
        for b in (i & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def gguf_chat_template(model_path: Path) -> str:
    from gguf import GGUFReader

    field = GGUFReader(str(model_path)).fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def longeval_parse(answer: str) -> int:
    runs = re.findall(r"\d+", answer)
    return int(runs[-1]) if runs else -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--testcases", type=Path, default=DEFAULT_CASES)
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model_path = args.model.resolve()
    tok = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    template = gguf_chat_template(model_path)
    model = AutoModelForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    eos = {tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")}

    records = [json.loads(line) for line in args.testcases.read_text(encoding="utf-8").splitlines()[: args.cases]]
    cases = []
    for index, r in enumerate(records):
        text = tok.apply_chat_template(
            [{"role": "user", "content": r["prompt"]}], chat_template=template, tokenize=False, add_generation_prompt=True
        )
        ids = tok(text, add_special_tokens=False)["input_ids"]
        out_ids, margins, answer = [], [], ""
        with torch.inference_mode():
            res = model(input_ids=torch.tensor([ids]), use_cache=True)
            for _ in range(MAX_TOKENS):
                logits = res.logits[0, -1].to(torch.float64)
                top = torch.topk(logits, 2)
                t = int(top.indices[0])
                if t in eos:
                    break
                piece = tok.decode([t])
                if answer.strip() and "\n" in piece:
                    break
                out_ids.append(t)
                margins.append(sig((top.values[0] - top.values[1]).item()))
                answer = tok.decode(out_ids)
                res = model(input_ids=torch.tensor([[t]]), past_key_values=res.past_key_values, use_cache=True)
        answer = answer.strip()
        parsed = longeval_parse(answer)
        cases.append(
            {
                "index": index,
                "key": r["random_idx"][0],
                "expected": r["expected_number"],
                "prompt_tokens": len(ids),
                "input_hash": fnv1a_ids(ids),
                "answer": answer,
                "answer_ids": out_ids,
                "margins": margins,
                "parsed": parsed,
                "right": parsed == r["expected_number"],
            }
        )
        print(f"case {index}: {len(ids)} tokens, expected {r['expected_number']}, answer {answer!r}", file=sys.stderr)

    meta = {
        "generator": "tools/reference/make_longeval_fixture.py",
        "implementation": "HF transformers LlamaForCausalLM, GGUF dequantized to fp32 at load, eager attention, "
        "greedy with its KV cache; prompt by apply_chat_template(GGUF chat template, add_generation_prompt=True)",
        "versions": versions(["torch", "transformers", "tokenizers", "gguf"]),
        "model_file": model_path.name,
        "model_sha256": sha256_file(model_path),
        "testcases": f"shared/data/longeval_lines/testcases/{args.testcases.name}",
        "testcases_sha256": sha256_file(args.testcases),
        "max_tokens": MAX_TOKENS,
        "accuracy": sum(c["right"] for c in cases) / len(cases),
    }
    write_fixture(args.out, {"description": __doc__.strip().splitlines()[0], "meta": meta, "cases": cases}, ("cases",))
    print(f"wrote {args.out} ({len(cases)} cases, accuracy {meta['accuracy']:.2f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

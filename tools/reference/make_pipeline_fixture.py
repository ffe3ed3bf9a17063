#!/usr/bin/env python3
"""Greedy answers of kvpress's own pipeline with the context compressed before the question.

Writes tests/fixtures/press_pipeline.json. Run inside tools/reference/.venv-kvpress (see
make_press_fixture.py):

    tools/reference/.venv-kvpress/bin/python tools/reference/make_pipeline_fixture.py   # ~8 min, 2 threads

Reference (not written by us): NVIDIA kvpress 0.5.5's KVPressTextGenerationPipeline
("kv-press-text-generation") on HF transformers' LlamaForCausalLM loaded from the GGUF (fp32,
sdpa). The pipeline is kvpress's question-agnostic mode: it applies the model's chat template
around the context, prefills the context alone inside the press's context manager (the press
compresses every layer), then prefills the question (and the template's end of the user turn)
on the compressed cache at the positions after the context, and decodes greedily until an
end-of-generation token or max_new_tokens.

Recorded per prompt: the pipeline's own context and question token ids (its preprocess()).
Per case: the greedy answer ids and, per step, the chosen token's logit and its margin over the
second best (read from the model's output at each pipeline call), so that a test can tell a real
difference from a near-tie. Cases per prompt: no press (the full cache) and, at capacity C,
SnapKVPress (the options of make_press_fixture.py), ExpectedAttentionPress, and
KVzipPress(layerwise=True) (the reconstruction prompt of make_kvzip_fixture.py: the press sees
the tokenizer without the chat template). Prompts: the first two of make_press_fixture.py, their
context cut before the question.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import copy  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_kvzip_fixture as mkz  # noqa: E402
import make_press_fixture as mpf  # noqa: E402
from fixture_io import sha256_file, sig, versions, write_fixture  # noqa: E402

DEFAULT_OUT = mpf.REPO / "tests" / "fixtures" / "press_pipeline.json"
CAPACITY = 256
MAX_NEW_TOKENS = 24


def presses(L: int, hkv: int):
    """(reference, our options, kvpress_args, factory) for one context of L tokens."""
    import kvpress as kp

    C = CAPACITY
    r = mpf.compute_ratio(L, C)
    snap = {"compression_ratio": r, "window_size": mpf.WINDOW, "kernel_size": mpf.KERNEL}
    rz = mkz.ratio_for(L, hkv, C)
    return [
        ("full cache", {"press": "full"}, None, lambda: None),
        ("kvpress.SnapKVPress",
         {"press": "snapkv", "window": mpf.WINDOW, "kernel": mpf.KERNEL, "pool": "avg", "gqa": "mean", "capacity": C},
         {"class": "SnapKVPress", **snap}, lambda: kp.SnapKVPress(**snap)),
        ("kvpress.ExpectedAttentionPress", {"press": "expected_attention", "capacity": C},
         {"class": "ExpectedAttentionPress", "compression_ratio": r},
         lambda: kp.ExpectedAttentionPress(compression_ratio=r)),
        ("kvpress.KVzipPress(layerwise=True)", {"press": "kvzip", "capacity": C, "budget": "ada", "alpha": 0.0},
         {"class": "KVzipPress", "compression_ratio": rz, "layerwise": True, "n_sink": mkz.N_SINK},
         lambda: kp.KVzipPress(compression_ratio=rz, layerwise=True, n_sink=mkz.N_SINK)),
    ]


def main() -> int:
    args = mpf.fixture_args(mpf.fixture_parser(__doc__, DEFAULT_OUT))
    t_start = time.time()
    import kvpress  # noqa: F401  (registers the pipeline)
    from transformers import pipeline

    model_path = args.model.resolve()
    tok, prompts, model, tok_check = mpf.load_hf(model_path, args.essays, 2)
    if tok.chat_template is None:
        raise SystemExit("the tokenizer has no chat template: the pipeline would not apply one")
    plain = copy.deepcopy(tok)  # KVzipPress's tokenizer: ours, untemplated
    plain.chat_template = None
    mkz.hand_tokenizer_to_kvzip(plain)
    pipe = pipeline("kv-press-text-generation", model=model, tokenizer=tok, device="cpu")

    steps = []

    def record(_module, _args, out):
        steps.append(out.logits[0, -1].detach().to(torch.float64))

    model.register_forward_hook(record)
    hkv = model.config.num_key_value_heads
    out_prompts, cases = [], []
    for pi, p in enumerate(prompts):
        context = p["text"][: p["context_chars"]]
        question = "\n\n" + p["question"].split("Question: ", 1)[1].removesuffix(" Answer:")
        pre = pipe.preprocess(context, questions=[question], answer_prefix="", max_context_length=10**10)
        context_ids = [int(x) for x in pre["context_ids"][0]]
        question_ids = [int(x) for x in pre["questions_ids"][0][0]]
        out_prompts.append({"name": p["name"], "question": question, "context_chars": p["context_chars"],
                            "essays_used": p["essays_used"], "context_ids": context_ids,
                            "question_ids": question_ids})
        for reference, options, kv_args, factory in presses(len(context_ids), hkv):
            t0 = time.time()
            steps.clear()
            answer = pipe(context, question=question, press=factory(), max_new_tokens=MAX_NEW_TOKENS)["answer"]
            ids, logits, margins = [], [], []
            for row in steps:
                top2 = torch.topk(row, 2)
                ids.append(int(top2.indices[0]))
                logits.append(sig(float(top2.values[0]), 7))
                margins.append(sig(float(top2.values[0] - top2.values[1])))
            if tok.decode(ids, skip_special_tokens=True) != answer:
                raise SystemExit(f"{reference}: the recorded steps do not give the pipeline's answer {answer!r}")
            print(f"{p['name']} {reference}: {answer!r} ({len(ids)} tokens, {time.time() - t0:.1f}s)", flush=True)
            cases.append({"prompt": pi, "reference": reference, "options": options, "kvpress_args": kv_args,
                          "answer": answer, "ids": ids, "logits": logits, "margins": margins})
    fixture = {
        "description": __doc__,
        "model": {"file": model_path.name, "sha256": sha256_file(model_path)},
        "versions": versions(["kvpress", "torch", "transformers"]),
        "tokenizer_check": tok_check,
        "max_new_tokens": MAX_NEW_TOKENS,
        "eos_token_id": model.generation_config.eos_token_id,
        "prompts": out_prompts,
        "cases": cases,
        "elapsed_s": round(time.time() - t_start, 1),
    }
    write_fixture(args.out, fixture, row_keys=("cases",))
    print(f"wrote {args.out} ({len(cases)} cases) in {time.time() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

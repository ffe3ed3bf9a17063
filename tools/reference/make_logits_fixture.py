#!/usr/bin/env python3
"""Reference logits from HF transformers loading the GGUF file (dequantized to fp32).

Writes tests/fixtures/logits_transformers.json. Run inside tools/reference/.venv:

    tools/reference/.venv/bin/python tools/reference/make_logits_fixture.py

The text is the start of a Paul Graham essay (niah_paulgraham/ in the evaluation data), tokenized
with the tokenizer transformers builds from the GGUF metadata, cut to N tokens, and
run through the model in one causal forward pass. Position i holds the prediction
for token i+1 given tokens 0..i.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import sha256_file, sig, versions, write_fixture  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ESSAYS = Path(os.environ.get("SNAPKV_SHARED", REPO.parent / "shared")) / "data" / "niah_paulgraham" / "PaulGrahamEssays"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "logits_transformers.json"


def gguf_add_bos(model_path: Path) -> bool | None:
    """The GGUF's tokenizer.ggml.add_bos_token flag, which llama.cpp follows."""
    from gguf import GGUFReader

    r = GGUFReader(str(model_path))
    field = r.fields.get("tokenizer.ggml.add_bos_token")
    if field is None:
        return None
    return bool(field.parts[field.data[0]][0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--essays", type=Path, default=DEFAULT_ESSAYS)
    ap.add_argument("--essay", default=None, help="file name in --essays (default: first in sorted order)")
    ap.add_argument("--n-tokens", type=int, default=1100)
    ap.add_argument("--top-full", type=int, default=64, help="top-k (id, logit) stored for the first positions")
    ap.add_argument("--n-full-positions", type=int, default=8)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    model_path = args.model.resolve()
    essay = args.essay or sorted(p.name for p in args.essays.glob("*.txt"))[0]
    text_full = (args.essays / essay).read_text(encoding="utf-8")

    add_bos = gguf_add_bos(model_path)
    tok = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    ids = tok(text_full, add_special_tokens=False)["input_ids"]
    if add_bos:
        ids = [tok.bos_token_id] + ids
    if len(ids) < args.n_tokens:
        raise SystemExit(f"{essay} has only {len(ids)} tokens, need {args.n_tokens}")
    ids = ids[: args.n_tokens]
    n_text = len(ids) - (1 if add_bos else 0)
    # The exact text those ids cover (decoding the text tokens only).
    text = tok.decode(ids[1:] if add_bos else ids, skip_special_tokens=False)
    if not text_full.startswith(text):
        print("warning: decoded prefix is not a prefix of the essay text", file=sys.stderr)

    model = AutoModelForCausalLM.from_pretrained(
        str(model_path.parent),
        gguf_file=model_path.name,
        dtype=torch.float32,
        attn_implementation="eager",
    )
    model.eval()
    # The reference must be a plain dense fp32 model (GGUF blocks dequantized at load time).
    non_fp32 = sorted({str(p.dtype) for p in model.parameters() if p.dtype != torch.float32})
    if non_fp32:
        raise SystemExit(f"model has non-fp32 parameters: {non_fp32}")
    tied = model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()

    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    logits = out.logits[0].to(torch.float64)  # [N, vocab]
    lse = torch.logsumexp(logits, dim=-1)
    top = torch.topk(logits, k=max(5, args.top_full), dim=-1)

    positions = []
    nlls = []
    for i in range(len(ids)):
        t_ids = top.indices[i].tolist()
        t_val = top.values[i].tolist()
        pos = {
            "argmax": int(t_ids[0]),
            "top5_ids": [int(x) for x in t_ids[:5]],
            "top5_logits": [sig(v) for v in t_val[:5]],
            "margin": sig(t_val[0] - t_val[1]),
            "lse": sig(lse[i].item(), 6),
        }
        if i + 1 < len(ids):
            nll = (lse[i] - logits[i, ids[i + 1]]).item()
            nlls.append(nll)
            pos["nll"] = sig(nll)
        else:
            pos["nll"] = None  # no next token
        if i < args.n_full_positions:
            pos["top64_ids"] = [int(x) for x in t_ids[: args.top_full]]
            pos["top64_logits"] = [sig(v) for v in t_val[: args.top_full]]
        positions.append(pos)

    ppl = math.exp(float(np.mean(nlls)))
    meta = {
        "generator": "tools/reference/make_logits_fixture.py",
        "implementation": f"HF transformers {type(model).__name__}, GGUF dequantized to fp32 at load",
        "versions": versions(["torch", "transformers", "tokenizers", "gguf", "numpy", "accelerate"]),
        "model_file": model_path.name,
        "model_sha256": sha256_file(model_path),
        "dtype": "float32",
        "attn_implementation": model.config._attn_implementation,
        "tie_word_embeddings": bool(model.config.tie_word_embeddings),
        "lm_head_shares_embedding_storage": bool(tied),
        "torch_threads": torch.get_num_threads(),
        "text_source": f"shared/data/niah_paulgraham/PaulGrahamEssays/{essay}",
        "text_file_sha256": hashlib.sha256(text_full.encode("utf-8")).hexdigest(),
        "text": text,
        "tokenizer": "transformers AutoTokenizer.from_pretrained(dir, gguf_file=...) (tokenizers backend from GGUF metadata)",
        "gguf_add_bos_token": add_bos,
        "bos_prepended": bool(add_bos),
        "n_tokens": len(ids),
        "n_text_tokens": n_text,
        "position_semantics": "positions[i] = logits after tokens 0..i (predicting input_ids[i+1]); nll is -log_softmax[input_ids[i+1]], null at the last position",
        "rounding": "logits, margin, nll: 5 significant digits; lse: 6 significant digits",
        "ppl_definition": "exp(mean nll over positions 0..N-2), i.e. tokens 1..N-1 given their prefix",
        "top64_positions": args.n_full_positions,
    }
    fixture = {"meta": meta, "input_ids": [int(x) for x in ids], "positions": positions, "ppl": sig(ppl, 7)}
    write_fixture(args.out, fixture, row_keys=("positions",))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes): N={len(ids)} ppl={ppl:.4f} bos={add_bos}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

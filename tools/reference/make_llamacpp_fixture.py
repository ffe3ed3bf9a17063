#!/usr/bin/env python3
"""Reference greedy continuations and perplexity from llama.cpp (llama-cpp-python).

Writes tests/fixtures/greedy_llamacpp.json and tests/fixtures/perplexity.json.
Run inside tools/reference/.venv, after make_logits_fixture.py (the perplexity part
evaluates the same input_ids as tests/fixtures/logits_transformers.json):

    tools/reference/.venv/bin/python tools/reference/make_llamacpp_fixture.py
    tools/reference/.venv/bin/python tools/reference/make_llamacpp_fixture.py --only greedy

Greedy decoding is done step by step on llama.cpp's logits: the next token is the
argmax of the last position's logits (ties go to the lowest id, as numpy.argmax does),
which is what temperature 0 / top_k 1 without repetition penalty amounts to.
Generation does not stop at EOS; where EOS came is recorded.

Each greedy case also carries the fp32 reference: HF transformers on the same GGUF
(dequantized to fp32, eager attention, as make_logits_fixture.py loads it), decoding
the same prompt_ids greedily on its own (free-running, KV cache, same tie rule), and
the step where its path first parts from llama.cpp's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import sha256_file, sig, versions, write_fixture  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SHARED = Path(os.environ.get("SNAPKV_SHARED", REPO.parent / "shared"))
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ESSAYS = SHARED / "data" / "niah_paulgraham" / "PaulGrahamEssays"
FIXTURES = REPO / "tests" / "fixtures"

N_CTX = 4096
N_THREADS = 2
N_BATCH = 2048  # the whole 1100-token perplexity window goes in as one batch
N_UBATCH = 2048
TORCH_THREADS = 2


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def top2(row: np.ndarray) -> tuple[int, int, float]:
    """(argmax, runner-up, margin top1 - top2) of one logits row."""
    a = int(np.argmax(row))
    rest = row.copy()
    rest[a] = -np.inf
    b = int(np.argmax(rest))
    return a, b, float(row[a]) - float(row[b])


def gguf_meta(llm, key: str):
    return llm.metadata.get(key)


def render_chat_template(template: str, messages: list[dict], bos: str, eos: str) -> str:
    """Render the GGUF's own tokenizer.chat_template the way HF/llama.cpp front ends do; None
    for a model without one (a base model such as Gemma-3-270M), whose chat cases are left out."""
    if not template:
        return None
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos
    )


def make_llm(model_path: Path, seed: int = 0):
    from llama_cpp import Llama

    return Llama(
        model_path=str(model_path),
        n_ctx=N_CTX,
        n_threads=N_THREADS,
        n_threads_batch=N_THREADS,
        n_batch=N_BATCH,
        n_ubatch=N_UBATCH,
        logits_all=True,
        flash_attn=False,
        seed=seed,
        verbose=False,
    )


def tokenize(llm, text: str) -> list[int]:
    # add_bos=True asks llama.cpp to add the special prefix tokens *if the vocab says so*
    # (tokenizer.ggml.add_bos_token); special=True parses <|im_start|> etc. as single tokens.
    return list(llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def greedy(llm, prompt_ids: list[int], n_new: int) -> dict:
    llm.reset()
    llm.eval(prompt_ids)
    gen, runner_up, margins = [], [], []
    for _ in range(n_new):
        row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        a, b, m = top2(row)
        gen.append(a)
        runner_up.append(b)
        margins.append(sig(m, 4))
        llm.eval([a])
    return {"generated_ids": gen, "runner_up_ids": runner_up, "margins": margins}


def load_transformers(model_path: Path):
    """The fp32 reference model, loaded exactly as make_logits_fixture.py loads it."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    torch.set_num_threads(TORCH_THREADS)  # fixed, so that fp32 reductions are reproducible
    model = AutoModelForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    non_fp32 = sorted({str(p.dtype) for p in model.parameters() if p.dtype != torch.float32})
    if non_fp32:
        raise SystemExit(f"model has non-fp32 parameters: {non_fp32}")
    return model


def greedy_transformers(model, prompt_ids: list[int], n_new: int) -> dict:
    """Free-running greedy with transformers: KV cache, not stopping at EOS, ties -> lowest id."""
    import torch

    gen, margins = [], []
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([prompt_ids], dtype=torch.long), use_cache=True)
        for step in range(n_new):
            row = out.logits[0, -1].to(torch.float32).numpy()
            a, _, m = top2(row)
            gen.append(a)
            margins.append(sig(m, 4))
            if step + 1 < n_new:
                out = model(
                    input_ids=torch.tensor([[a]], dtype=torch.long), past_key_values=out.past_key_values, use_cache=True
                )
    return {"ids": gen, "margins": margins}


def teacher_forced_agreement(model, prompt_ids: list[int], generated: list[int]) -> int:
    """Steps where transformers' argmax, fed llama.cpp's own continuation, is llama.cpp's token."""
    import torch

    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt_ids + generated], dtype=torch.long), use_cache=False).logits[0]
    rows = logits[len(prompt_ids) - 1 : len(prompt_ids) + len(generated) - 1].to(torch.float32).numpy()
    return sum(int(np.argmax(r)) == t for r, t in zip(rows, generated))


def greedy_via_sampler(llm, prompt_ids: list[int], n_new: int) -> list[int]:
    """Cross-check: llama-cpp-python's own generate() with temperature 0."""
    llm.reset()
    out = []
    for t in llm.generate(prompt_ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
        out.append(int(t))
        if len(out) == n_new:
            break
    return out


def build_cases(llm, essays: Path) -> list[dict]:
    template = gguf_meta(llm, "tokenizer.chat_template")
    bos_id, eos_id = llm.token_bos(), llm.token_eos()
    bos = llm.detokenize([bos_id], special=True).decode("utf-8")
    eos = llm.detokenize([eos_id], special=True).decode("utf-8")

    cases = [
        {"name": "plain_short", "prompt": "The capital of France is"},
        {
            "name": "chatml_question",
            "prompt": "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
            "note": "ChatML turn written by hand, no system message",
        },
        {
            "name": "chat_template_default_system",
            "prompt": render_chat_template(
                template, [{"role": "user", "content": "Give me three tips for writing clear code."}], bos, eos
            ),
            "note": "rendered with the GGUF tokenizer.chat_template (adds its default system message)",
        },
        {"name": "code_python", "prompt": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'},
        {"name": "list_numbered", "prompt": "Things to pack for a camping trip:\n1. Tent\n2. Sleeping bag\n3."},
        {"name": "digits_sequence", "prompt": "Count from 1 to 20: 1, 2, 3, 4, 5,"},
    ]
    essay_names = sorted(p.name for p in essays.glob("*.txt"))

    def essay_prefix(name: str, n_tokens: int) -> str:
        ids = tokenize(llm, (essays / name).read_text(encoding="utf-8"))
        if len(ids) < n_tokens:
            raise SystemExit(f"{name} has only {len(ids)} tokens, need {n_tokens}")
        return llm.detokenize(ids[:n_tokens], special=True).decode("utf-8")

    # A longer passage: the first 500 llama.cpp tokens of the second essay in sorted order.
    essay = essay_names[1]
    cases.append(
        {
            "name": "essay_passage_500",
            "prompt": essay_prefix(essay, 500),
            "note": f"first 500 tokens of shared/data/niah_paulgraham/PaulGrahamEssays/{essay}",
        }
    )

    # ---- added later (cases 8-16); the seven above are unchanged -------------------
    cases += [
        {"name": "fact_short", "prompt": "Water boils at a temperature of"},
        {
            "name": "chatml_history",
            "prompt": "<|im_start|>user\nWho was the first emperor of Rome, and how did he come to power?"
            "<|im_end|>\n<|im_start|>assistant\n",
            "note": "ChatML turn written by hand, no system message",
        },
        {
            "name": "json_snippet",
            "prompt": '{\n  "name": "Alice",\n  "age": 30,\n  "email": "alice@example.com",\n  "languages": [',
        },
        {
            "name": "code_c",
            "prompt": "#include <stddef.h>\n\n/* Return the number of bytes before the terminating NUL. */\n"
            "size_t my_strlen(const char *s) {\n",
        },
        {"name": "dialogue_line", "prompt": '"Where were you last night?" she asked, closing the door behind her.\n"'},
        {
            "name": "recipe_list",
            "prompt": "Simple pancakes\n\nIngredients:\n- 1 cup all-purpose flour\n- 2 tablespoons sugar\n- 1 egg\n-",
        },
        {
            "name": "multilingual",
            "prompt": "English: The weather is beautiful today.\nFrançais : Il fait très beau aujourd'hui.\n"
            "Deutsch: Das Wetter ist heute schön.\nEspañol:",
            "note": "non-ASCII letters (ç, è, ö, ñ) in the prompt",
        },
        {
            "name": "math_word_problem_chat",
            "prompt": render_chat_template(
                template,
                [
                    {
                        "role": "user",
                        "content": "A baker makes 12 muffins per tray and bakes 7 trays. She sells 53 muffins. "
                        "How many muffins are left?",
                    }
                ],
                bos,
                eos,
            ),
            "note": "rendered with the GGUF tokenizer.chat_template (adds its default system message)",
        },
    ]
    essay = essay_names[2]
    cases.append(
        {
            "name": "essay_passage_1000",
            "prompt": essay_prefix(essay, 1000),
            "note": f"first 1000 tokens of shared/data/niah_paulgraham/PaulGrahamEssays/{essay}",
        }
    )
    return [c for c in cases if c["prompt"] is not None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--essays", type=Path, default=DEFAULT_ESSAYS)
    ap.add_argument("--n-new", type=int, default=64)
    ap.add_argument("--logits-fixture", type=Path, default=FIXTURES / "logits_transformers.json")
    ap.add_argument("--greedy-out", type=Path, default=FIXTURES / "greedy_llamacpp.json")
    ap.add_argument("--ppl-out", type=Path, default=FIXTURES / "perplexity.json")
    ap.add_argument("--only", choices=("greedy", "perplexity"), default=None, help="write only one of the two fixtures")
    args = ap.parse_args()

    import llama_cpp

    model_path = args.model.resolve()
    llm = make_llm(model_path)
    add_bos_meta = gguf_meta(llm, "tokenizer.ggml.add_bos_token")  # llama-cpp-python gives strings
    if isinstance(add_bos_meta, str):
        add_bos_meta = {"true": True, "false": False}.get(add_bos_meta.lower(), add_bos_meta)
    # every token llama.cpp treats as end of generation (EOS, EOT, ...)
    eog = [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(llm.model), t)]

    common_meta = {
        "versions": versions(["llama-cpp-python", "numpy", "jinja2"]),
        "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(),
        "model_file": model_path.name,
        "model_sha256": sha256_file(model_path),
        "llama_params": {
            "n_ctx": N_CTX,
            "n_threads": N_THREADS,
            "n_batch": N_BATCH,
            "n_ubatch": N_UBATCH,
            "logits_all": True,
            "seed": 0,
            "flash_attn": False,
            "type_k": "f16 (llama.cpp default)",
            "type_v": "f16 (llama.cpp default)",
        },
        "gguf_add_bos_token": add_bos_meta,
        "bos_prepended": add_bos_meta is True,
        "bos_id": int(llm.token_bos()),
        "eos_id": int(llm.token_eos()),
        "eog_ids": eog,
    }

    if args.only != "perplexity":
        write_greedy(llm, args, common_meta, eog, model_path)
    if args.only != "greedy":
        write_perplexity(llm, args, common_meta)
    return 0


def write_greedy(llm, args, common_meta: dict, eog: list[int], model_path: Path) -> None:
    cases_out = []
    for case in build_cases(llm, args.essays):
        prompt_ids = tokenize(llm, case["prompt"])
        g = greedy(llm, prompt_ids, args.n_new)
        text = llm.detokenize(g["generated_ids"], special=True).decode("utf-8", "replace")
        eos_at = [i for i, t in enumerate(g["generated_ids"]) if t in eog]
        row = {
            "name": case["name"],
            "prompt": case["prompt"],
            "prompt_ids": prompt_ids,
            "generated_ids": g["generated_ids"],
            "margins": g["margins"],
            "runner_up_ids": g["runner_up_ids"],
            "first_eog_index": eos_at[0] if eos_at else None,
            "text": text,
        }
        if "note" in case:
            row["note"] = case["note"]
        cross = greedy_via_sampler(llm, prompt_ids, args.n_new)
        row["llama_cpp_greedy_sampler_agrees"] = cross == g["generated_ids"]
        cases_out.append(row)
        print(f"{case['name']}: {len(prompt_ids)} prompt tokens, eog at {row['first_eog_index']}, "
              f"min margin {min(g['margins']):.4g}, sampler agrees {row['llama_cpp_greedy_sampler_agrees']}")
        print("   ", repr(text[:120]))

    # ---- the fp32 reference on the same prompt_ids: HF transformers ----------------
    model = load_transformers(model_path)
    n_identical = 0
    tf_agree = tf_total = 0
    divergences = []
    for row in cases_out:
        t = greedy_transformers(model, row["prompt_ids"], args.n_new)
        first = next((i for i, (a, b) in enumerate(zip(t["ids"], row["generated_ids"])) if a != b), None)
        row["transformers_ids"] = t["ids"]
        row["transformers_margins"] = t["margins"]
        row["first_divergence"] = first
        tf = teacher_forced_agreement(model, row["prompt_ids"], row["generated_ids"])
        row["transformers_teacher_forced_agree"] = tf
        tf_agree += tf
        tf_total += len(row["generated_ids"])
        if first is None:
            n_identical += 1
            print(f"{row['name']}: transformers identical; teacher-forced {tf}/{len(row['generated_ids'])}")
        else:
            d = {
                "name": row["name"],
                "step": first,
                "llama_cpp_margin": row["margins"][first],
                "transformers_margin": t["margins"][first],
            }
            divergences.append(d)
            print(f"{row['name']}: transformers parts at step {first} (llama.cpp margin {d['llama_cpp_margin']}, "
                  f"transformers margin {d['transformers_margin']}); teacher-forced {tf}/{len(row['generated_ids'])}")

    greedy_meta = dict(common_meta)
    greedy_meta.update(
        {
            "generator": "tools/reference/make_llamacpp_fixture.py",
            "implementation": "llama.cpp via llama-cpp-python, quantized weights as stored in the GGUF",
            "decoding": f"greedy: argmax of llama.cpp logits (ties -> lowest id), {args.n_new} new tokens, "
            "no repetition penalty, does not stop at EOS/EOG",
            "tokenization": "llama.cpp tokenizer: llama_tokenize(text, add_special=True, parse_special=True); "
            "BOS is added only if tokenizer.ggml.add_bos_token is true",
            "margins": "logit(top1) - logit(top2) at each generated step, 4 significant digits",
            "runner_up_ids": "the top-2 token at each generated step",
            "first_eog_index": "index into generated_ids of the first end-of-generation token, or null",
            "llama_cpp_greedy_sampler_agrees": "generated_ids equal llama-cpp-python generate(temp=0, top_k=1)",
            "transformers_reference": "HF transformers AutoModelForCausalLM.from_pretrained(models/, gguf_file=..., "
            "dtype=float32, attn_implementation='eager') (as make_logits_fixture.py), "
            f"torch threads {TORCH_THREADS}; fed the same prompt_ids",
            "transformers_versions": versions(["torch", "transformers", "tokenizers", "gguf", "accelerate"]),
            "transformers_ids": "transformers' own free-running greedy continuation of prompt_ids (KV cache, "
            f"ties -> lowest id, {args.n_new} tokens, not stopping at EOS)",
            "transformers_margins": "logit(top1) - logit(top2) of transformers at each of its own steps, "
            "4 significant digits",
            "first_divergence": "first index where transformers_ids != generated_ids, or null if identical; "
            "margins[i] and transformers_margins[i] at that index are the two references' margins there",
            "transformers_teacher_forced_agree": "steps (of the generated ones) where transformers' argmax, given "
            "prompt_ids + llama.cpp's generated_ids[:i], equals generated_ids[i]",
            "n_cases": len(cases_out),
            "n_cases_transformers_identical": n_identical,
            "transformers_teacher_forced_agreement": f"{tf_agree}/{tf_total}",
            "transformers_divergences": divergences,
        }
    )
    write_fixture(args.greedy_out, {"meta": greedy_meta, "cases": cases_out}, row_keys=("cases",))
    print(f"wrote {args.greedy_out} ({args.greedy_out.stat().st_size} bytes): "
          f"transformers identical to llama.cpp in {n_identical} of {len(cases_out)} cases; "
          f"teacher-forced agreement {tf_agree}/{tf_total}")


def write_perplexity(llm, args, common_meta: dict) -> None:
    ref = json.loads(args.logits_fixture.read_text(encoding="utf-8"))
    ids = [int(x) for x in ref["input_ids"]]
    n = len(ids)
    if n > N_CTX:
        raise SystemExit("input longer than n_ctx")
    llm.reset()
    llm.eval(ids)
    logits = np.asarray(llm.scores[:n], dtype=np.float32)
    lsm = log_softmax(logits)
    nll = [float(-lsm[i, ids[i + 1]]) for i in range(n - 1)]
    ppl_llama = math.exp(float(np.mean(nll)))
    argmax_llama = [int(x) for x in np.argmax(logits, axis=-1)]

    ref_pos = ref["positions"]
    argmax_hf = [int(p["argmax"]) for p in ref_pos]
    agree = [a == b for a, b in zip(argmax_llama, argmax_hf)]
    margins_hf = np.array([float(p["margin"]) for p in ref_pos])
    clear = margins_hf >= 0.1
    agree_clear = float(np.mean(np.array(agree)[clear])) if clear.any() else None
    disagree_pos = [i for i, ok in enumerate(agree) if not ok]
    nll_hf = np.array([float(p["nll"]) for p in ref_pos[:-1]])
    nll_diff = np.abs(np.array(nll) - nll_hf)

    # Does llama.cpp's own tokenizer give the same ids for the fixture's text?
    llama_ids_of_text = tokenize(llm, ref["meta"]["text"])
    same_tok = llama_ids_of_text == (ids[1:] if ref["meta"].get("bos_prepended") else ids)

    ppl_meta = dict(common_meta)
    ppl_meta.update(
        {
            "generator": "tools/reference/make_llamacpp_fixture.py",
            "implementation": "llama.cpp via llama-cpp-python, one window (all ids evaluated in one batch, fresh KV cache)",
            "ppl_definition": "exp(mean NLL of tokens 1..N-1 given their prefix); nll_llamacpp[i] = -log_softmax(logits[i])[input_ids[i+1]]",
            "nll_rounding": "4 decimals",
            "llamacpp_tokenizer_matches_input_ids": same_tok,
            "top1_agreement_llamacpp_vs_transformers": round(float(np.mean(agree)), 6),
            "top1_agreement_where_transformers_margin_ge_0.1": None if agree_clear is None else round(agree_clear, 6),
            "n_positions_margin_ge_0.1": int(clear.sum()),
            "top1_disagreement_positions": disagree_pos,
            "nll_abs_diff_vs_transformers": {
                "mean": round(float(nll_diff.mean()), 5),
                "max": round(float(nll_diff.max()), 5),
                "p99": round(float(np.quantile(nll_diff, 0.99)), 5),
            },
        }
    )
    fixture = {
        "meta": ppl_meta,
        "input_ids_source": args.logits_fixture.name,
        "n_tokens": n,
        "ppl_llamacpp": sig(ppl_llama, 7),
        "ppl_transformers": ref["ppl"],
        "nll_llamacpp": [round(x, 4) for x in nll],
        "argmax_llamacpp": argmax_llama,
    }
    write_fixture(args.ppl_out, fixture)
    print(f"wrote {args.ppl_out} ({args.ppl_out.stat().st_size} bytes): ppl llama.cpp {ppl_llama:.4f} "
          f"transformers {ref['ppl']}; top-1 agreement {np.mean(agree):.4f} "
          f"(margin>=0.1: {agree_clear}); llama.cpp tokenizer same ids: {same_tok}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Random-weight GGUFs in the shapes of the models people run, for speed comparisons only.

Each shape is written once as an F16 `llama` GGUF, one tensor at a time (the 8B source is ~16 GB and
never held in memory), and then quantized by llama.cpp's own llama-quantize to each requested type,
so both engines read files made by the same quantizer as the GGUFs people download. The tokenizer
(vocabulary, merges, special tokens, chat template) is the default model's, so every prompt tool of
this repository works on these files; the vocabulary is therefore 49,152 tokens, not the shapes'
own 128,256, which makes the embedding/output matrices smaller than the real models'.

Weights are N(0, 0.02) and the norms 1.0: activations stay in a sane range through all layers, so
neither engine meets NaN or inf, while the cost of every kernel is that of real weights. Drawing
8 billion normal numbers takes longer than writing them, so every matrix is cut from one pool of
POOL_SIZE draws, from a random offset (the pool's odd length keeps rows from lining up).

Run through scripts/make_bench_models.sh (which makes the venv with numpy and gguf), e.g.

  bash scripts/make_bench_models.sh --shapes 1b --types Q4_K_M,Q4_0
  bash scripts/make_bench_models.sh --shapes 8b --types Q4_K_M

Files: OUT/llama-<shape>-<type>.gguf (default OUT: $HOME/.cache/snapkv/bench-models); existing
files are kept. The F16 source is deleted after quantizing unless --keep-source.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter


@dataclass(frozen=True)
class Shape:
    label: str        # what the shape copies, written as general.name
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    tied: bool        # output head = token embedding table
    rope_theta: float


SHAPES = {
    "1b": Shape("Llama-3.2-1B shape (random weights)", 16, 2048, 32, 8, 8192, True, 500000.0),
    "3b": Shape("Llama-3.2-3B shape (random weights)", 28, 3072, 24, 8, 8192, True, 500000.0),
    "8b": Shape("Llama-3.1-8B shape (random weights)", 32, 4096, 32, 8, 14336, False, 500000.0),
}
TYPES = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0"]
CONTEXT_LENGTH = 131072
WEIGHT_STD = 0.02
POOL_SIZE = (1 << 25) + 4099


def die(msg):
    sys.exit(f"{Path(sys.argv[0]).name}: {msg}")


def tensor_shapes(s: Shape, n_vocab: int):
    """(name, numpy shape (rows, cols) or (n,), is_norm) in the order llama.cpp's converter writes them."""
    hd = s.n_embd // s.n_head
    out = [("token_embd.weight", (n_vocab, s.n_embd), False)]
    for i in range(s.n_layer):
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", (s.n_embd,), True),
            (b + "attn_q.weight", (s.n_head * hd, s.n_embd), False),
            (b + "attn_k.weight", (s.n_head_kv * hd, s.n_embd), False),
            (b + "attn_v.weight", (s.n_head_kv * hd, s.n_embd), False),
            (b + "attn_output.weight", (s.n_embd, s.n_head * hd), False),
            (b + "ffn_norm.weight", (s.n_embd,), True),
            (b + "ffn_gate.weight", (s.n_ff, s.n_embd), False),
            (b + "ffn_up.weight", (s.n_ff, s.n_embd), False),
            (b + "ffn_down.weight", (s.n_embd, s.n_ff), False),
        ]
    out.append(("output_norm.weight", (s.n_embd,), True))
    if not s.tied:
        out.append(("output.weight", (n_vocab, s.n_embd), False))
    return out


def copy_fields(reader: GGUFReader, writer: GGUFWriter, keep):
    """Every metadata key of the source for which keep(key) holds, byte for byte (strings as raw
    bytes, not re-decoded); returns the number of tokens in tokenizer.ggml.tokens if it was copied."""
    n_vocab = None
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or not keep(key):
            continue
        vtype = f.types[0]
        if vtype == GGUFValueType.ARRAY:
            sub = f.types[-1]
            if sub == GGUFValueType.STRING:
                val = [bytes(f.parts[i]) for i in f.data]
            else:
                val = [f.parts[i].tolist()[0] for i in f.data]
            writer.add_key_value(key, val, vtype, sub_type=sub)
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(val)
        elif vtype == GGUFValueType.STRING:
            writer.add_key_value(key, bytes(f.parts[f.data[0]]), vtype)
        else:
            writer.add_key_value(key, f.parts[f.data[0]].tolist()[0], vtype)
    return n_vocab


def fill_from_pool(flat, pool, offset):
    """flat[:] = the pool from offset on, wrapping around."""
    pos = 0
    while pos < flat.size:
        n = min(pool.size - offset, flat.size - pos)
        flat[pos:pos + n] = pool[offset:offset + n]
        pos, offset = pos + n, 0


def write_source(shape_name: str, s: Shape, tokenizer_gguf: Path, path: Path, seed: int):
    reader = GGUFReader(str(tokenizer_gguf))
    tmp = path.with_suffix(".gguf.part")
    w = GGUFWriter(str(tmp), "llama")
    hd = s.n_embd // s.n_head
    w.add_name(s.label)
    w.add_context_length(CONTEXT_LENGTH)
    w.add_embedding_length(s.n_embd)
    w.add_block_count(s.n_layer)
    w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(s.rope_theta)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)  # mostly F16
    n_vocab = copy_fields(reader, w, lambda key: key.startswith("tokenizer."))
    if not n_vocab:
        die(f"{tokenizer_gguf}: no tokenizer.ggml.tokens to borrow")
    w.add_vocab_size(n_vocab)
    del reader

    shapes = tensor_shapes(s, n_vocab)
    for name, shp, is_norm in shapes:
        dtype = np.float32 if is_norm else np.float16  # llama.cpp keeps norms in F32
        w.add_tensor_info(name, shp, np.dtype(dtype), int(np.prod(shp)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()

    rng = np.random.default_rng(seed)
    pool = (rng.standard_normal(POOL_SIZE, dtype=np.float32) * WEIGHT_STD).astype(np.float16)
    total = sum(int(np.prod(shp)) for _, shp, _ in shapes)
    done, t0 = 0, time.time()
    for name, shp, is_norm in shapes:
        if is_norm:
            w.write_tensor_data(np.ones(shp, dtype=np.float32))
        else:
            # GGUFWriter writes whole arrays, so one matrix is held in F16 (at most 805 MB, the 8B
            # output head).
            m = np.empty(shp, dtype=np.float16)
            fill_from_pool(m.reshape(-1), pool, int(rng.integers(pool.size)))
            w.write_tensor_data(m)
            del m
        done += int(np.prod(shp))
        if name.endswith("ffn_down.weight") or name in ("token_embd.weight", "output.weight"):
            print(f"  {shape_name} F16: {name} ({100 * done / total:.0f} %, {time.time() - t0:.0f} s)", file=sys.stderr)
    w.close()
    tmp.rename(path)


def quantize(llama_quantize: str, src: Path, dst: Path, qtype: str, threads: int):
    tmp = dst.with_suffix(".gguf.part")
    cmd = [llama_quantize, str(src), str(tmp), qtype, str(threads)]
    log = dst.with_suffix(".quantize.log")
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        tmp.unlink(missing_ok=True)
        die(f"llama-quantize failed ({rc}) for {dst.name}; its output is in {log}")
    tmp.rename(dst)
    log.unlink()


def main():
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="1b", help=f"comma-separated, of {','.join(SHAPES)} (default 1b)")
    ap.add_argument("--types", default=",".join(TYPES), help=f"llama-quantize types (default {','.join(TYPES)})")
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/snapkv/bench-models"))
    ap.add_argument("--tokenizer-from", default=str(repo / "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
                    help="GGUF whose tokenizer.* keys are copied (default: the default model)")
    ap.add_argument("--llama-quantize", default=None,
                    help="llama-quantize binary (default: $SNAPKV_LLAMACPP_DIR/bin or "
                         "~/.cache/snapkv/llamacpp-0.3.36/bin, as scripts/build_llamacpp.sh installs it)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="llama-quantize threads")
    ap.add_argument("--keep-source", action="store_true", help="keep llama-<shape>-F16.gguf after quantizing")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    shapes = [x for x in a.shapes.split(",") if x]
    types = [x for x in a.types.split(",") if x]
    for sh in shapes:
        if sh not in SHAPES:
            die(f"--shapes: unknown shape {sh!r} (known: {', '.join(SHAPES)})")
    for t in types:
        if t != "F16" and not t.startswith(("Q", "IQ", "BF16", "TQ")):
            die(f"--types: {t!r} is not a llama-quantize type name (e.g. Q4_K_M)")
    tok = Path(a.tokenizer_from)
    if not tok.is_file():
        die(f"{tok}: no such file (the tokenizer source; scripts/download_model.sh fetches the default model)")
    quant = a.llama_quantize
    if quant is None:
        root = os.environ.get("SNAPKV_LLAMACPP_DIR", os.path.expanduser("~/.cache/snapkv/llamacpp-0.3.36"))
        quant = os.path.join(root, "bin", "llama-quantize")
    if any(t != "F16" for t in types) and not (os.path.isfile(quant) and os.access(quant, os.X_OK)):
        die(f"{quant}: no llama-quantize there; build it with scripts/build_llamacpp.sh or pass --llama-quantize")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    for sh in shapes:
        s = SHAPES[sh]
        src = out / f"llama-{sh}-F16.gguf"
        wanted = [t for t in types if t != "F16" and not (out / f"llama-{sh}-{t}.gguf").exists()]
        need_src = bool(wanted) or ("F16" in types)
        if need_src and not src.exists():
            n_params = s.n_layer * (2 * s.n_embd * s.n_embd + 2 * s.n_embd * s.n_head_kv * (s.n_embd // s.n_head)
                                    + 3 * s.n_embd * s.n_ff)
            need = 2 * n_params * 1.1 + 49152 * s.n_embd * 2 * (1 if s.tied else 2)
            free = shutil.disk_usage(out).free
            if free < need:
                die(f"{out}: {free / 1e9:.1f} GB free, the {sh} F16 source needs about {need / 1e9:.1f} GB")
            print(f"{sh}: writing {src}", file=sys.stderr)
            write_source(sh, s, tok, src, a.seed)
        for t in wanted:
            dst = out / f"llama-{sh}-{t}.gguf"
            print(f"{sh}: quantizing to {t}", file=sys.stderr)
            t0 = time.time()
            quantize(quant, src, dst, t, a.threads)
            print(f"  {dst} ({dst.stat().st_size / 1e9:.2f} GB, {time.time() - t0:.0f} s)", file=sys.stderr)
        if src.exists() and "F16" not in types and not a.keep_source:
            src.unlink()
        for t in types:
            print(out / f"llama-{sh}-{t}.gguf")


if __name__ == "__main__":
    main()

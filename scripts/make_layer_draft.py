#!/usr/bin/env python3
"""A draft model for speculative decoding cut from the model itself: a GGUF with only some of its
layers (the "skip layers" self-drafting of Draft & Verify, Zhang et al. 2023, without the search).

No smaller model with the default model's vocabulary is reachable here, and a draft model must share
the vocabulary. A copy of the model that skips some of its blocks is one: the same embeddings,
final norm and output head, fewer blocks. It costs a fraction of a full step per drafted token and
agrees with the full model where the skipped blocks change little. Every tensor is copied as it is
stored (quantized bytes untouched), every metadata key too; only `<arch>.block_count` and
`general.name` change. Only architectures whose blocks are all alike are taken (a Gemma's
sliding-window layers, for one, are chosen by their index, which renumbering would change).

On the default model this does not pay (docs/speculative.md, "A draft model on this CPU"): it is
here to measure the draft-model path with a real draft of the same vocabulary.

  bash scripts/gguf_python.sh scripts/make_layer_draft.py --layers 0-11,26-29 \\
      models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/draft.gguf

The output is written next to its final name and renamed when complete.
"""
import argparse
import re
import sys
from pathlib import Path

from gguf import GGUFReader, GGUFValueType, GGUFWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_bench_models import copy_fields, die  # noqa: E402


UNIFORM_ARCHS = ("llama", "qwen2", "qwen3", "mistral")


def parse_layers(spec: str, n_layer: int) -> list[int]:
    """"0-11,26-29" -> [0, ..., 11, 26, ..., 29], each once, ascending, all below n_layer."""
    out = set()
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            die(f"--layers: {part!r} is not N or N-M")
        lo, hi = int(m[1]), int(m[2] if m[2] is not None else m[1])
        if lo > hi or hi >= n_layer:
            die(f"--layers: {part!r} is outside 0-{n_layer - 1}")
        out.update(range(lo, hi + 1))
    return sorted(out)


def field_value(f):
    return f.parts[f.data[0]].tolist()[0]


def field_string(f) -> str:
    return bytes(f.parts[f.data[0]]).decode(errors="replace")


def write_draft(reader: GGUFReader, arch: str, keep: list[int], which: str, stem: str, tmp: Path):
    """The draft GGUF (blocks keep, renumbered in order) to tmp."""
    renumber = {old: new for new, old in enumerate(keep)}
    w = GGUFWriter(str(tmp), arch)
    copy_fields(reader, w, lambda key: key not in ("general.architecture", "general.name", f"{arch}.block_count"))
    name = field_string(reader.fields["general.name"]) if "general.name" in reader.fields else stem
    w.add_name(f"{name}, layers {which} (draft)")
    w.add_block_count(len(keep))
    tensors = []
    for t in reader.tensors:
        m = re.match(r"blk\.(\d+)\.(.*)", t.name)
        if m and int(m[1]) not in renumber:
            continue
        tname = f"blk.{renumber[int(m[1])]}.{m[2]}" if m else t.name
        tensors.append(t)
        w.add_tensor_info(tname, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in tensors:
        w.write_tensor_data(t.data)
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", required=True, help="blocks to keep, e.g. 0-11,26-29 (renumbered in order)")
    ap.add_argument("model", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    if not a.model.is_file():
        die(f"{a.model}: no such file")
    try:
        reader = GGUFReader(str(a.model))
    except Exception as e:  # the gguf package raises several kinds on a damaged file
        die(f"{a.model}: not a readable GGUF ({e})")
    if "general.architecture" not in reader.fields:
        die(f"{a.model}: no general.architecture")
    arch = field_string(reader.fields["general.architecture"])
    if arch not in UNIFORM_ARCHS:
        die(f"{a.model}: architecture {arch!r} is not one whose blocks are all alike ({', '.join(UNIFORM_ARCHS)})")
    if f"{arch}.block_count" not in reader.fields:
        die(f"{a.model}: no {arch}.block_count")
    n_layer = int(field_value(reader.fields[f"{arch}.block_count"]))
    for key, f in reader.fields.items():
        if key.startswith(f"{arch}.") and f.types[0] == GGUFValueType.ARRAY and len(f.data) == n_layer:
            die(f"{key}: per-layer metadata is not supported by this script")
    keep = parse_layers(a.layers, n_layer)

    tmp = a.out.with_suffix(a.out.suffix + ".part")
    try:
        write_draft(reader, arch, keep, f"{a.layers} of {n_layer}", a.model.stem, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.rename(a.out)
    print(f"{a.out}: {len(keep)} of {n_layer} blocks ({a.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()

"""Small helpers shared by the reference-fixture scripts (no third-party imports here)."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import math
import platform
from pathlib import Path


def sig(x: float, digits: int = 5) -> float:
    """Round to `digits` significant digits (keeps the JSON small)."""
    x = float(x)
    if x == 0.0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits - 1}e}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions(packages: list[str]) -> dict:
    out = {"python": platform.python_version()}
    for p in packages:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def _compact(v) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def write_fixture(path: Path, obj: dict, row_keys: tuple[str, ...] = ()) -> None:
    """Write `obj` as JSON with one top-level key per line; lists named in
    `row_keys` get one element per line, so git diffs stay readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    items = list(obj.items())
    for n, (k, v) in enumerate(items):
        end = "," if n + 1 < len(items) else ""
        if k in row_keys and isinstance(v, list):
            rows = [" " + _compact(r) for r in v]
            body = "[\n" + ",\n".join(rows) + "\n]" if rows else "[]"
            lines.append(f"{_compact(k)}:{body}{end}")
        else:
            lines.append(f"{_compact(k)}:{_compact(v)}{end}")
    text = "{\n" + "\n".join(lines) + "\n}\n"
    json.loads(text)  # must round-trip
    path.write_text(text, encoding="utf-8")

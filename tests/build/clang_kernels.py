"""The SIMD kernels compile under clang without a warning.

Every translation unit under src/ops/ (the x86 kernels and the per-target Highway code) and
bench/probes/peak.cpp goes through `clang++ -fsyntax-only -Werror` with the flags the build gives
it (compile_commands.json). GCC accepts some uses of intrinsics that clang rejects (a lane index
that is not a constant expression broke the clang fuzz build on 2026-12-02, unseen by the GCC
build); scripts/fuzz.sh and anyone building with clang need these files to compile.

Usage: clang_kernels.py BUILD_DIR
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("src/ops/", "bench/probes/peak.cpp")


def clang_args(entry: dict) -> list[str]:
    """The entry's compiler flags without the compiler, the source, -c and -o FILE."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and a != entry["file"]:
            out.append(a)
    return out


def main() -> int:
    build = Path(sys.argv[1])
    clang = shutil.which("clang++")
    if clang is None:
        print("FAIL clang++ is not installed (scripts/install_deps.sh installs it)")
        return 1
    entries = [e for e in json.loads((build / "compile_commands.json").read_text())
               if Path(e["file"]).resolve().relative_to(ROOT).as_posix().startswith(CHECKED)]
    if not entries:
        print(f"FAIL no kernel sources in {build / 'compile_commands.json'}")
        return 1
    failed = 0
    for e in entries:
        r = subprocess.run([clang, "-fsyntax-only", "-Werror", *clang_args(e), e["file"]], cwd=e["directory"],
                           capture_output=True, text=True)
        name = Path(e["file"]).resolve().relative_to(ROOT)
        print(f"{'ok  ' if r.returncode == 0 else 'FAIL'} {name}")
        if r.returncode != 0:
            failed += 1
            print(r.stderr[-4000:])
    print(f"{len(entries) - failed} of {len(entries)} compile under {clang}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

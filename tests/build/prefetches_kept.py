"""The interleaved decode kernels keep their software prefetches in the optimized build.

A prefetch has no visible effect on results, so no other test sees it go. GCC 12 compiled every
per-granule prefetch of the K-quant kernels out of the build for a day (a wrapper that only
prefetches is found "const" and its call deleted; src/util/prefetch.h), while experiments on
their prefetch distance and cache level were measured and recorded. This reads the kernels'
machine code (`objdump -d` of the core library) and asks each of them for more prefetch
instructions than the one loop that starts a thread's rows.

Usage: prefetches_kept.py CORE_LIBRARY BUILD_TYPE
"""
from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys

# Kernels (demangled names) and the least number of prefetch instructions each must hold: the
# Q4_0 / Q4_1 / Q8_0 kernels ask for a block's lines per block, the K-quant ones for a part of
# a super-block before each granule (4 or 8 parts, into L2 and L1).
KERNELS = {
    re.compile(r"snapkv::q8_(avx2|vnni)::Rows8<"): 3,
    re.compile(r"snapkv::qk_(avx2|vnni)::Q45Rows8<"): 8,
    re.compile(r"snapkv::qk_(avx2|vnni)::Q6Rows8<"): 8,
}
SKIP = 77  # ctest's SKIP_RETURN_CODE for this test


def prefetch_counts(disassembly: str) -> dict[str, int]:
    """Prefetch instructions per function of an `objdump -d -C` listing."""
    counts: dict[str, int] = {}
    name = None
    for line in disassembly.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if head:
            name = head.group(1)
            counts[name] = 0
        elif name is not None and "\tprefetch" in line:
            counts[name] += 1
    return counts


def main() -> int:
    library, build_type = sys.argv[1], sys.argv[2]
    if platform.machine() not in ("x86_64", "AMD64"):
        print(f"skipped: the interleaved kernels are x86-64 code, this is {platform.machine()}")
        return SKIP
    if build_type not in ("Release", "RelWithDebInfo", "MinSizeRel"):
        print(f"skipped: a {build_type or 'default'} build does not inline the prefetch helpers")
        return SKIP
    objdump = shutil.which("objdump")
    if objdump is None:
        print("FAIL objdump is not installed (binutils, which the compiler needs)")
        return 1
    listing = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", library], capture_output=True, text=True,
                             check=True).stdout
    counts = prefetch_counts(listing)
    failed = 0
    for pattern, least in KERNELS.items():
        found = {n: c for n, c in counts.items() if pattern.search(n)}
        if not found:
            print(f"FAIL no kernel matches {pattern.pattern} in {library}")
            failed += 1
            continue
        short = {n: c for n, c in found.items() if c < least}
        for n, c in sorted(short.items()):
            print(f"FAIL {c} prefetch instructions (at least {least} expected) in {n}")
        print(f"{'ok  ' if not short else 'FAIL'} {len(found) - len(short)} of {len(found)} kernels matching "
              f"{pattern.pattern} hold at least {least} prefetches")
        failed += bool(short)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Named checks for the server's Python test programs: one PASS/FAIL line each, every check run."""
from __future__ import annotations

import sys
import time
import traceback


class Checks:
    def __init__(self):
        self.failed: list[str] = []
        self.passed = 0

    def run(self, name: str, fn):
        t0 = time.monotonic()
        try:
            detail = fn()
            self.passed += 1
            print(f"PASS {name} ({time.monotonic() - t0:.1f}s){': ' + detail if detail else ''}", flush=True)
        except Exception as e:  # noqa: BLE001 — every failure is reported, then the next check runs
            self.failed.append(name)
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3, file=sys.stdout)


def expect(cond: bool, message: str):
    if not cond:
        raise AssertionError(message)

"""A `snapkv serve` process for scripts and tests (standard library only).

Started on a free loopback port (`--port 0`; the port is read from the one line the server prints
on stdout, `listening on http://HOST:PORT`), its stderr kept in a temporary log, stopped by SIGTERM
and killed as a last resort.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path



def cached_tokens(reply: dict) -> int:
    """The prompt tokens a completion's reply says were resumed from a cached state."""
    return reply["usage"]["prompt_tokens_details"]["cached_tokens"]


class SnapkvServer:
    def __init__(self, binary: str, model: str, args: list[str], startup_timeout: float = 60):
        self.cmd = [binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", *args]
        self.log = tempfile.NamedTemporaryFile(prefix="snapkv-serve-", suffix=".log", delete=False)
        self.stdout_lines: list[str] = []  # all the server printed on stdout (one line expected)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.port = self._read_port(startup_timeout)

    def _read_port(self, timeout: float) -> int:
        found: list[int] = []

        def reader():  # keeps draining stdout after the first line
            for line in self.proc.stdout:
                self.stdout_lines.append(line)
                m = re.fullmatch(r"listening on http://127\.0\.0\.1:(\d+)\s*", line)
                if m and not found:
                    found.append(int(m.group(1)))

        threading.Thread(target=reader, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        if not found:
            status, tail = self.proc.poll(), self.log_tail()
            self.cleanup()
            raise RuntimeError(f"{' '.join(self.cmd)}: no 'listening on http://127.0.0.1:PORT' line "
                               f"(exit status {status}; stdout {self.stdout_lines!r}); stderr:\n{tail}")
        return found[0]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def get(self, path: str, timeout: float = 10) -> str:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.read().decode()

    def metrics(self) -> dict[str, float]:
        """/metrics as {'name{labels}': value}."""
        out = {}
        for line in self.get("/metrics").splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        return out

    def rss_bytes(self) -> int | None:
        return self._status_kib("VmRSS")

    def peak_rss_bytes(self) -> int | None:
        return self._status_kib("VmHWM")

    def thread_cpu_seconds(self) -> dict[int, float]:
        """CPU seconds (user + system) of each of the server's threads by thread id (/proc/PID/task/*/stat)."""
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for stat in Path(f"/proc/{self.proc.pid}/task").glob("*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()  # from field 3, the state
                out[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / tick  # fields 14 and 15
            except (OSError, ValueError, IndexError):
                pass  # the thread ended meanwhile
        return out

    def _status_kib(self, key: str) -> int | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def terminate(self, timeout: float = 60) -> int | None:
        """SIGTERM; the exit status, or None when it did not stop in time."""
        if not self.alive():
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def cleanup(self):
        """Kills the server if it still runs and removes its log."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass

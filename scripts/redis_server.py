"""A real redis-server for tests and scripts (Debian's, standard library only): started on a
loopback port with nothing saved to disk, spoken to over its wire protocol (RESP)."""
from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """redis-server on a loopback port; commands over RESP."""

    def __init__(self, port: int):
        self.port = port
        self.proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--daemonize", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"redis-server on port {port} did not start")
            time.sleep(0.05)

    def command(self, *args: str):
        req = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(req.encode())
            f = s.makefile("rb")
            return self._reply(f)

    def _reply(self, f):
        line = f.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:].decode()
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(rest)
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if rest == "-1" else f.read(int(rest) + 2)[:-2]
        if kind == b"*":
            return [self._reply(f) for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)

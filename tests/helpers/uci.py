"""`oneply uci` over raw pipes: the engine command and a reader that can time out."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

from tests.conftest import ENGINE_CMD, REPO

UCI_CMD = [*ENGINE_CMD, "uci"]


class RawEngine:
    """`oneply uci` over raw pipes, with a reader thread so reads can time out."""

    def __init__(self, *args: str, command: list[str] | None = None):
        self.proc = subprocess.Popen(
            [*(command or UCI_CMD), *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode(errors="replace").rstrip("\n"))

    def send(self, data: str | bytes) -> None:
        self.proc.stdin.write(data if isinstance(data, bytes) else (data + "\n").encode())
        self.proc.stdin.flush()

    def read_until(self, prefix: str, timeout: float = 20.0) -> list[str]:
        """All lines up to and including the first that starts with prefix."""
        seen, end = [], time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} within {timeout}s; got {seen}") from None
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        assert self.proc.returncode == 0

"""Process helpers for the kill tests (generate, annotate): who is still alive in a session."""

from __future__ import annotations

import time
from pathlib import Path


def session_processes(session: int) -> list[int]:
    """PIDs of the live processes in a session (a run started with start_new_session=True, its
    workers and their Stockfish)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":  # fields[3]: the session id
            pids.append(int(entry.name))
    return pids


def wait_until_gone(session: int, seconds: float) -> list[int]:
    """The session's processes still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while (alive := session_processes(session)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive

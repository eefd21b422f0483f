"""Process plumbing shared by the steps that run Stockfish worker pools (positions, annotate)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Make SIGTERM (`kill`, `docker stop`, a job scheduler) raise KeyboardInterrupt.

    A run then stops through the same path as Ctrl-C: the worker pool and its Stockfish
    processes are shut down and finished work is kept. SIGTERM's default action kills only the
    main process and leaves the pool's workers waiting forever on a dead task queue.
    Only the main thread can install handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

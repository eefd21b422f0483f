"""The interrupt-safe worker pool shared by the steps that run Stockfish in worker processes
(generate, positions, annotate).

What it guarantees, and why each part is needed:

* SIGTERM (`kill`, `docker stop`, a job scheduler) stops a run the way Ctrl-C does
  (``sigterm_as_interrupt``): SIGTERM's default action kills only the main process and leaves
  the pool's workers waiting forever on a dead task queue.
* A worker dies with its parent, even mid-game or mid-search: each worker asks the kernel for
  SIGKILL when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``), and checks once at start
  that the parent is still there (it may have died before the request). Checking
  ``os.getppid()`` only between tasks let workers outlive a SIGKILLed run for as long as a task
  takes. A worker's Stockfish reads EOF on its stdin when the worker dies, and quits.
* Workers ignore Ctrl-C (the parent handles it and terminates the pool) and take SIGTERM's
  default action, so ``Pool.terminate`` is immediate.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import multiprocessing.pool
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Make SIGTERM raise KeyboardInterrupt in the main thread for the duration.

    A run then stops through the same path as Ctrl-C: the worker pool and its Stockfish
    processes are shut down and finished work is kept. Only the main thread can install
    handlers; elsewhere this does nothing.
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


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; exit now if it has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(parent: int, initializer: Callable | None, initargs: tuple) -> None:
    die_with_parent(parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def worker_pool(
    workers: int,
    initializer: Callable | None = None,
    initargs: tuple = (),
    start_method: str = "spawn",
) -> Iterator[multiprocessing.pool.Pool]:
    """A process pool whose workers never outlive the run; terminated and joined on exit.

    Ctrl-C and SIGTERM both arrive as KeyboardInterrupt in the caller, after which the
    workers (and their Stockfish processes) are gone.
    """
    context = mp.get_context(start_method)
    with sigterm_as_interrupt():
        pool = context.Pool(workers, _start_worker, (os.getpid(), initializer, initargs))
        try:
            yield pool
        finally:
            pool.terminate()
            pool.join()

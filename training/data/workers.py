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
  default action, so ``Pool.terminate`` is immediate — from the moment they are forked
  (``sigterm_with_default_action``), not only once their initializer has run.
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing as mp
import multiprocessing.pool
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from oneply.engine.errors import CommandError

PR_SET_PDEATHSIG = 1


@contextmanager
def _sigterm_handler(handler: Callable[[int, object], None] | int) -> Iterator[None]:
    """SIGTERM handled by `handler` for the duration; only the main thread can install
    handlers, elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sigterm_as_interrupt() -> AbstractContextManager[None]:
    """Make SIGTERM raise KeyboardInterrupt in the main thread for the duration.

    A run then stops through the same path as Ctrl-C: the worker pool and its Stockfish
    processes are shut down and finished work is kept.
    """

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    return _sigterm_handler(interrupt)


def run_interruptible(
    command: str,
    body: Callable[[], int],
    errors: tuple[type[Exception], ...],
    interrupted: str,
) -> int:
    """`oneply train <command>`'s body with SIGTERM as Ctrl-C: the `errors` it expects become
    a CommandError (exit 2); an interruption prints "interrupted: `interrupted`" and exits 130,
    the finished work kept."""
    try:
        with sigterm_as_interrupt():
            return body()
    except errors as error:
        raise CommandError(f"oneply train {command}: error: {error}", exit_code=2) from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: {interrupted}", file=sys.stderr)
        return 130


def add_workers_argument(
    parser: argparse.ArgumentParser, help: str, parse: Callable[[str], int] = int
) -> None:
    """``--workers``: how many processes (default: one per core)."""
    parser.add_argument("--workers", type=parse, default=os.cpu_count() or 1, help=help)


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; exit now if it has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(
    parent: int, initializer: Callable[..., object] | None, initargs: tuple[object, ...]
) -> None:
    die_with_parent(parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def worker_pool(
    workers: int,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[object, ...] = (),
    start_method: str = "spawn",
) -> Iterator[multiprocessing.pool.Pool]:
    """A process pool whose workers never outlive the run; terminated and joined on exit.

    Ctrl-C and SIGTERM both arrive as KeyboardInterrupt in the caller, after which the
    workers (and their Stockfish processes) are gone.
    """
    context = mp.get_context(start_method)
    with sigterm_with_default_action():
        pool = context.Pool(workers, _start_worker, (os.getpid(), initializer, initargs))
    try:
        with sigterm_as_interrupt():
            yield pool
    finally:
        pool.terminate()
        pool.join()


def sigterm_with_default_action() -> AbstractContextManager[None]:
    """SIGTERM's default action for the duration (main thread only), while the pool forks.

    A forked worker inherits the parent's SIGTERM handler until its initializer resets it. A
    Python handler only sets a flag that is read later, so a worker terminated in that window
    (a run with little work ends at once) reset the handler, dropped the signal and waited
    for tasks forever while ``Pool.join`` waited for it: a hang seen in the test suite.
    Forked under the default action, such a worker simply dies.
    """
    return _sigterm_handler(signal.SIG_DFL)

"""The graceful stop: the first SIGTERM or Ctrl-C drains the bot, a second one stops it at once.

Draining means: no new challenge is accepted (each is declined with `later`), matchmaking stops
challenging, games still in their first moves are aborted (Lichess allows it before both sides
have moved), and every other game is played to its end, for at most config.yml's
`shutdown.timeout` seconds; then the bot exits with status 0. A game still running at the bound
is left on Lichess: a restarted bot picks it up (main.py reads /api/account/playing at start).
A second signal ends the wait at once and the bot exits with 128 + the signal's number.

Docker sends SIGTERM on `docker stop` and SIGKILL after its stop timeout (10 s unless told
otherwise), so `docker stop -t` / compose's `stop_grace_period` must exceed `shutdown.timeout`
for the games to be finished (docs/bot.md, "Stopping the bot").
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("oneply.bot")

#: the signals that stop the bot: `docker stop`, systemd, kill (TERM) and Ctrl-C (INT)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """What the stop signals asked for so far: nothing, a drain, or a stop at once."""

    def __init__(self) -> None:
        self.draining = threading.Event()
        self.forced = threading.Event()
        self.signum: int | None = None
        self.requested_at: float | None = None
        self._count = 0
        self._lock = threading.Lock()

    def request(self, signum: int | None = None) -> None:
        """One stop request (a signal, or a call): the first drains, the next forces."""
        with self._lock:
            self._count += 1
            first = self._count == 1
            self.signum = signum if signum is not None else self.signum
        name = signal.Signals(signum).name if signum is not None else "request"
        if first:
            self.requested_at = time.monotonic()
            self.draining.set()
            log.info(
                "event=shutdown_requested signal=%s action=drain (again to stop at once)", name
            )
        else:
            self.draining.set()
            self.forced.set()
            log.warning("event=shutdown_forced signal=%s action=exit_now", name)

    def elapsed(self) -> float:
        return 0.0 if self.requested_at is None else time.monotonic() - self.requested_at

    def exit_code(self) -> int:
        """0 after a drain; 128 + the signal's number when a second signal cut it short (the
        shell's convention for a process a signal ended)."""
        if self.forced.is_set() and self.signum is not None:
            return 128 + self.signum
        return 0

    def install(self) -> Callable[[], None]:
        """Route SIGTERM and SIGINT here (main thread only); returns what restores the old
        handlers."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.request(signum)

        previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}

        def restore() -> None:
            for sig, old in previous.items():
                signal.signal(sig, old)

        return restore

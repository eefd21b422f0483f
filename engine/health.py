"""`oneply health`: the Docker HEALTHCHECK. Exit 0 when healthy, 1 with a reason when not.

Checks that the model loads and scores a position (a legal move comes back). For the bot it
also checks liveness of the Lichess event stream: the bot touches a heartbeat file on every
line the stream delivers, keep-alives included (Lichess sends one about every 7 s); a file
older than --max-age seconds means the stream is dead. No heartbeat file (the UCI engine, or a
bot that is still starting) means only the model is checked.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import chess

from oneply.engine.errors import CommandError
from oneply.engine.facts import native
from oneply.engine.model.model_file import ModelFileError, add_model_argument
from oneply.engine.play.inference import Scorer

HEARTBEAT_ENV = "ONEPLY_HEARTBEAT"


def heartbeat_path() -> Path:
    """$ONEPLY_HEARTBEAT, else /tmp/oneply-bot.heartbeat (shared by the bot and `health`)."""
    return Path(os.environ.get(HEARTBEAT_ENV) or "/tmp/oneply-bot.heartbeat")


class Heartbeat:
    """Touches the heartbeat file every `interval` seconds while `alive` is set.

    The bot sets `alive` when the event stream's response arrives and clears it when the
    stream breaks. A stream that stops delivering bytes (keep-alives included) hits the read
    timeout and breaks, so a fresh file means the stream delivered something recently.
    berserk swallows the keep-alive lines themselves, hence this indirection.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, interval: float = 5.0):
        self.path = Path(path) if path else heartbeat_path()
        self.interval = interval
        self.alive = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        try:
            self.path.touch()
        except OSError:
            pass  # a read-only or missing directory must not stop the bot

    def start(self) -> None:
        self.beat()  # the file exists from start-up on, so health checks it
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.alive.is_set():
                self.beat()

    def stop(self) -> None:
        self._stop.set()


def check_model(model: str | None) -> str:
    scorer = Scorer(model, threads=1)
    board = chess.Board()
    best = scorer.score(board)[0].move
    if best not in board.legal_moves:
        raise RuntimeError(f"model proposed an illegal move {best}")
    return f"model ok: {scorer.info.describe()} on {scorer.provider}, plays {best.uci()}"


def check_heartbeat(path: Path, max_age: float) -> str:
    if not path.exists():
        return "no bot heartbeat file (not running the bot): skipped"
    age = time.time() - path.stat().st_mtime
    if age > max_age:
        raise RuntimeError(f"bot event stream silent for {age:.0f}s (> {max_age:.0f}s): {path}")
    return f"bot event stream alive ({age:.0f}s ago)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(parser)
    parser.add_argument(
        "--heartbeat",
        default=None,
        help="bot heartbeat file (default: $ONEPLY_HEARTBEAT, then /tmp/oneply-bot.heartbeat)",
    )
    parser.add_argument("--max-age", type=float, default=60.0, help="seconds of stream silence")


def run(args: argparse.Namespace) -> int:
    try:
        print(check_model(args.model))
        print(native.describe())
        print(check_heartbeat(Path(args.heartbeat or heartbeat_path()), args.max_age))
    except (ModelFileError, RuntimeError) as error:
        raise CommandError(f"unhealthy: {error}", exit_code=1) from None
    return 0

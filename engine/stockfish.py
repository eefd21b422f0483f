"""Stockfish: where it is, starting it, scoring with it, stopping it — for every part of oneply.

The move policy's fallback, the bot, the training data tools, the strength lab and the tests'
references all start Stockfish. They find it the same way, so a user sets it up once: an
explicit path or command name (``--stockfish``, ``StockfishPath``, ``engine.stockfish_path``)
wins; without one, ``stockfish`` on PATH; without that, the Debian/Ubuntu package's location.
They also start, configure and stop it the same way, and a Stockfish that cannot be started
is always the one :class:`StockfishStartError`, "Stockfish did not start: …".

Three clients, one life cycle: :func:`open_stockfish` gives python-chess's engine client (time
limits, root moves, MultiPV through :func:`multipv_scores`); :func:`popen_stockfish_async` its
asyncio protocol, for the match runner's adjudicator (arena/engines.py), which owns the
handshake and the process group; :class:`UciPipe` is a bare UCI pipe for the data engine's hot
path (training/data/stockfish_scorer.py), which reads only the lines it needs and is twice as
fast as python-chess's client at shallow depths. All start through :func:`require_stockfish`
and fail with the same message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import chess
import chess.engine

from oneply.engine.errors import CommandError

#: where `apt-get install stockfish` puts it (not on PATH for non-login shells on Debian)
DEBIAN_STOCKFISH = "/usr/games/stockfish"

#: how a help text or error message describes the lookup
LOOKUP_TEXT = f"`stockfish` on PATH, else {DEBIAN_STOCKFISH}"

#: how long Stockfish may take to answer `uci` (python-chess's own default)
START_TIMEOUT_S = 10.0

#: a single-threaded Stockfish with a small hash: the data engine and the strength lab run
#: one per worker, so each must stay small and reproducible
SMALL = {"Threads": 1, "Hash": 16}

#: UCI option values as python-chess and the pipe take them
Options = Mapping[str, str | int | bool]


class StockfishNotFound(FileNotFoundError):
    """No Stockfish executable where the user said, or anywhere we look by default."""


# run from the repo, mypy sees oneply.* imports as Any (the editable install maps them with an
# import hook), so CommandError is Any here; where they resolve, the ignore is unused
class StockfishStartError(CommandError):  # type: ignore[misc, unused-ignore]
    """Stockfish could not be found or started; the message says why and what to do."""

    def __init__(self, reason: object):
        super().__init__(start_message(reason), exit_code=2)
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[object]]:  # from a worker process, intact
        return (StockfishStartError, (self.reason,))


class StockfishError(RuntimeError):
    """A started Stockfish stopped answering (it died, or broke the protocol)."""


def start_message(reason: object) -> str:
    """The one wording of a Stockfish that did not start."""
    return f"Stockfish did not start: {reason}"


# --------------------------------------------------------------------------- where it is


def find_stockfish(path: str | None = None) -> str | None:
    """The Stockfish executable, or None when there is none.

    ``path`` may be a file path or a command name on PATH (``stockfish``); empty or None
    means "look": ``stockfish`` on PATH, else :data:`DEBIAN_STOCKFISH`.
    """
    if path:  # a file that is not executable (StockfishPath /etc/passwd) is not Stockfish
        return shutil.which(path) or (path if _executable(path) else None)
    found = shutil.which("stockfish")
    if found:
        return found
    return DEBIAN_STOCKFISH if os.access(DEBIAN_STOCKFISH, os.X_OK) else None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def require_stockfish(path: str | None = None) -> str:
    """Like :func:`find_stockfish`, but a missing Stockfish is an error that says what to do."""
    found = find_stockfish(path)
    if found is None:
        where = repr(path) if path else LOOKUP_TEXT
        raise StockfishNotFound(
            f"Stockfish not found ({where}): install it (apt-get install stockfish) "
            "or give its path"
        )
    return found


def _executable_or_start_error(path: str | None) -> str:
    try:
        return require_stockfish(path)
    except StockfishNotFound as error:
        raise StockfishStartError(error) from None


# --------------------------------------------------------------------------- python-chess client


def open_stockfish(
    path: str | None = None, options: Options | None = None, timeout: float = START_TIMEOUT_S
) -> chess.engine.SimpleEngine:
    """A started, configured Stockfish (python-chess's client); close it with
    :func:`close_stockfish`. Any failure to start is a :class:`StockfishStartError`."""
    executable = _executable_or_start_error(path)
    try:
        engine = chess.engine.SimpleEngine.popen_uci(executable, timeout=timeout)
    except (OSError, chess.engine.EngineError, TimeoutError) as error:
        raise StockfishStartError(f"{executable}: {error or type(error).__name__}") from None
    try:
        if options:
            engine.configure(dict(options))
    except chess.engine.EngineError as error:
        close_stockfish(engine, kill=True)
        raise StockfishStartError(f"{executable}: {error}") from None
    return engine


async def popen_stockfish_async(
    path: str | None = None, **popen_args: Any
) -> tuple[asyncio.SubprocessTransport, chess.engine.UciProtocol]:
    """A started Stockfish for an asyncio client, before the `uci` handshake, which the caller
    does (``popen_args`` go to python-chess's popen: ``setpgrp``, ``stderr``). A Stockfish
    that is missing or cannot be run is a :class:`StockfishStartError`."""
    executable = _executable_or_start_error(path)
    try:
        return await chess.engine.UciProtocol.popen(executable, **popen_args)
    except OSError as error:
        raise StockfishStartError(f"{executable}: {error}") from None


def close_stockfish(engine: chess.engine.SimpleEngine, kill: bool = False) -> None:
    """Stop it: `quit`, and kill it when it does not (never raises). ``kill`` skips the
    `quit` and never blocks, for an engine that may hang (the move policy's fallback)."""
    if not kill:
        try:
            engine.quit()
            return
        except Exception:  # already dead, or hung: kill it below
            pass
    with contextlib.suppress(Exception):
        engine.close()  # closes the transport, which kills the process


def multipv_scores(
    engine: chess.engine.SimpleEngine,
    board: chess.Board,
    limit: chess.engine.Limit,
    moves: Sequence[chess.Move] | None = None,
    game: object = None,
) -> dict[chess.Move, chess.engine.Score]:
    """Stockfish's score (for the mover) of each of ``moves`` (default: every legal move), from
    one MultiPV search; a move Stockfish gives no line for is absent."""
    moves = list(board.legal_moves) if moves is None else list(moves)
    if not moves:
        return {}
    infos = engine.analyse(board, limit, multipv=len(moves), root_moves=moves, game=game)
    scores: dict[chess.Move, chess.engine.Score] = {}
    for info in infos:
        pv, score = info.get("pv"), info.get("score")
        if pv and score is not None and pv[0] in moves and pv[0] not in scores:
            scores[pv[0]] = score.relative
    return scores


# --------------------------------------------------------------------------- the bare pipe


class UciPipe:
    """A Stockfish process over a bare UCI pipe: started (``uci``, options, ``isready``),
    written to, read up to a token, and stopped. :class:`StockfishError` once it has died."""

    def __init__(self, path: str | None = None, options: Options | None = None):
        executable = _executable_or_start_error(path)
        try:
            self.process = subprocess.Popen(
                [executable],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
        except OSError as error:
            raise StockfishStartError(f"{executable}: {error}") from None
        self.id: dict[str, str] = {}
        try:
            self.send("uci")
            for line in self.lines_until("uciok"):
                if line.startswith("id name "):
                    self.id["name"] = line[len("id name ") :].strip()
            for name, value in (options or {}).items():
                self.send(f"setoption name {name} value {value}")
            self.send("isready")
            for _ in self.lines_until("readyok"):
                pass
        except StockfishError as error:
            self.quit()
            raise StockfishStartError(f"{executable}: {error}") from None

    def send(self, command: str) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise StockfishError("Stockfish has exited") from None

    def lines_until(self, token: str) -> Iterator[str]:
        """Stockfish's lines up to (not including) the one that starts with ``token``."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(token):
                return
            yield line
        raise StockfishError(f"Stockfish exited before answering {token!r}")

    def quit(self) -> None:
        """`quit`, killed after 5 s; the pipes closed (never raises)."""
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(timeout=5)
            except (StockfishError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a dead Stockfish's pipe cannot flush
                    stream.close()

"""Engine processes for the match runner: start, talk UCI, kill the whole group; the adjudicator.

Every engine runs in its own process group so that a crash or Ctrl-C never leaves one running.
The adjudicator's Stockfish is started through engine/stockfish.py, like every Stockfish.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from typing import Any

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from oneply.arena.settings import MATE_CP, EngineSpec
from oneply.engine.stockfish import (
    LOOKUP_TEXT,
    StockfishStartError,
    find_stockfish,
    popen_stockfish_async,
)

#: how every engine process is started: its own process group, its stderr dropped
GROUP: dict[str, Any] = {"setpgrp": True, "stderr": asyncio.subprocess.DEVNULL}


class EngineStartError(Exception):
    """The engine could not be started or configured."""


class EngineProcess:
    """One running UCI engine in its own process group, so we can always kill all of it."""

    def __init__(self, spec: EngineSpec, pids: list[int]) -> None:
        self.spec = spec
        self.pids = pids
        self.transport: asyncio.SubprocessTransport | None = None
        self.protocol: chess.engine.UciProtocol | None = None
        self.pid: int | None = None

    @property
    def alive(self) -> bool:
        return self.protocol is not None and not self.protocol.returncode.done()

    @property
    def name(self) -> str:
        if self.spec.name:
            return self.spec.name
        if self.protocol is not None and self.protocol.id.get("name"):
            return self.protocol.id["name"]
        return self.spec.label()

    async def start(self, timeout: float) -> None:
        """Spawn, handshake (uci/uciok) and apply options; EngineStartError on any failure."""
        self.transport, self.protocol = await self.spawn()
        self.pid = self.transport.get_pid()
        self.pids.append(self.pid)
        try:
            await asyncio.wait_for(self.protocol.initialize(), timeout)
            if self.spec.options:
                await asyncio.wait_for(self.protocol.configure(dict(self.spec.options)), timeout)
        except TimeoutError as exc:
            self.kill()
            raise EngineStartError(f"{self.spec.label()}: no answer within {timeout:g}s") from exc
        except (chess.engine.EngineError, OSError) as exc:
            self.kill()
            raise EngineStartError(f"{self.spec.label()}: {type(exc).__name__}: {exc}") from exc

    async def spawn(self) -> tuple[asyncio.SubprocessTransport, chess.engine.UciProtocol]:
        """The engine's process, started from its command line."""
        try:
            return await chess.engine.UciProtocol.popen(list(self.spec.command), **GROUP)
        except OSError as exc:
            raise EngineStartError(f"cannot run {shlex.join(self.spec.command)}: {exc}") from exc

    def kill(self) -> None:
        """SIGKILL the engine's whole process group (safe to call twice)."""
        if self.pid is None:
            return
        if self.transport is not None and self.transport.get_returncode() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.transport.kill()

    async def close(self, graceful: bool = True) -> None:
        """`quit` (if it still listens), else kill; wait until the process is reaped."""
        if self.protocol is None or self.transport is None:
            return
        try:
            if graceful and self.alive:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.protocol.quit(), 2.0)
        finally:
            self.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.protocol.returncode), 5.0)
            self.transport.close()


class StockfishProcess(EngineProcess):
    """A Stockfish engine process, started through engine/stockfish.py."""

    async def spawn(self) -> tuple[asyncio.SubprocessTransport, chess.engine.UciProtocol]:
        try:
            return await popen_stockfish_async(self.spec.command[0], **GROUP)
        except StockfishStartError as exc:
            raise EngineStartError(str(exc)) from exc


class Adjudicator:
    """A shared Stockfish that confirms eval adjudications (started lazily, one search at once)."""

    def __init__(self, path: str | None, nodes: int, pids: list[int], timeout: float) -> None:
        # a name on PATH counts as much as a file path; "" means look for Stockfish
        self.path = None if path is None else find_stockfish(path)
        self.nodes = nodes
        self.pids = pids
        self.timeout = timeout
        self.engine: EngineProcess | None = None
        self.lock = asyncio.Lock()
        self.broken = self.path is None
        if path is not None and self.path is None:
            where = repr(path) if path else LOOKUP_TEXT
            print(f"adjudicator: no Stockfish ({where}); eval adjudication off", file=sys.stderr)

    async def white_cp(self, board: chess.Board) -> int | None:
        """Stockfish's eval in centipawns from White's side, or None if it is unavailable."""
        if self.broken:
            return None
        async with self.lock:
            try:
                if self.engine is None or not self.engine.alive:
                    self.engine = StockfishProcess(EngineSpec((self.path or "",)), self.pids)
                    await self.engine.start(self.timeout)
                assert self.engine.protocol is not None
                info = await asyncio.wait_for(
                    self.engine.protocol.analyse(board, chess.engine.Limit(nodes=self.nodes)),
                    self.timeout,
                )
            except (EngineStartError, TimeoutError, chess.engine.EngineError) as exc:
                print(f"adjudicator unavailable ({exc}); eval adjudication off", file=sys.stderr)
                self.broken = True
                if self.engine is not None:
                    await self.engine.close(graceful=False)
                return None
        score = info.get("score")
        return None if score is None else score.white().score(mate_score=MATE_CP)

    async def close(self) -> None:
        if self.engine is not None:
            await self.engine.close()

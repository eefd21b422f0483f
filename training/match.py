"""`oneply match`: engine-vs-engine games between two UCI engines, with Elo and its interval.

No cutechess or fastchess binary is available here, so this is a small runner on python-chess's
asyncio engine client. Design points (why they are so):

* **Paired openings.** Game ``2k`` and ``2k+1`` start from the same opening with colours swapped,
  so the opening's bias cancels and the pentanomial statistics in :mod:`training.elo` apply.
* **The runner keeps the clock.** Engines are told their remaining time, but we measure wall time
  per move ourselves, subtract it, add the increment, and forfeit an engine whose clock falls below
  ``-timemargin``. An engine that never answers is killed at that deadline.
* **Misbehaviour is a loss, never a runner crash.** Crash, illegal move, time forfeit: the
  offending engine loses, the reason goes to the JSON and to the PGN ``Termination`` tag, and that
  engine is restarted for the next game. Every engine runs in its own process group and is killed
  (group-wide) on the way out, including on Ctrl-C.
* **Adjudication.** Draws by the rules (checkmate, stalemate, insufficient material, threefold
  repetition *as it happens*, fifty moves); optional Syzygy tables; a win when both engines'
  reported evals stay beyond ``--resign-score`` for ``--resign-moves`` moves each and a Stockfish
  search confirms it (Stockfish also stands in for an engine that reports no score).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import random
import shlex
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from training import elo

DEFAULT_BOOK = "/usr/share/games/gnuchess/book.bin"
DEFAULT_STOCKFISH = "/usr/games/stockfish"
#: plies of a random book walk when --plies is not given
DEFAULT_BOOK_PLIES = 8
#: what a mate score counts as, in centipawns, for adjudication
MATE_CP = 100_000

# PGN Termination tag values (cutechess-compatible wording)
TERM_NORMAL = "normal"
TERM_ADJUDICATION = "adjudication"
TERM_TIME = "time forfeit"
TERM_ILLEGAL = "illegal move"
TERM_ABANDONED = "abandoned"
TERM_UNTERMINATED = "unterminated"


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class TimeControl:
    """How long an engine may think: clock (base+inc), fixed movetime, and/or a node budget."""

    base: float | None = None
    inc: float = 0.0
    movetime: float | None = None
    nodes: int | None = None

    @property
    def has_clock(self) -> bool:
        return self.base is not None

    def pgn_tag(self) -> str:
        """PGN TimeControl tag: "10+0.1" (clock), "1/0.5" (0.5 s per move), "-" (nodes only)."""
        if self.base is not None:
            return f"{self.base:g}+{self.inc:g}"
        if self.movetime is not None:
            return f"1/{self.movetime:g}"
        return "-"

    def describe(self) -> str:
        parts = []
        if self.base is not None:
            parts.append(f"tc={self.base:g}+{self.inc:g}")
        if self.movetime is not None:
            parts.append(f"movetime={self.movetime * 1000:g}ms")
        if self.nodes is not None:
            parts.append(f"nodes={self.nodes}")
        return " ".join(parts) or "unlimited"


@dataclass(frozen=True)
class EngineSpec:
    """A UCI engine as the user gave it: command line, UCI options and its time control."""

    command: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()
    tc: TimeControl = TimeControl(base=10.0, inc=0.1)
    name: str | None = None

    def label(self) -> str:
        return self.name or Path(self.command[0]).name


@dataclass(frozen=True)
class Opening:
    """A start position plus the book moves played from it (in UCI)."""

    fen: str | None = None
    moves: tuple[str, ...] = ()
    name: str | None = None

    def root(self) -> chess.Board:
        return chess.Board(self.fen) if self.fen else chess.Board()

    def board(self) -> chess.Board:
        board = self.root()
        for uci in self.moves:
            board.push_uci(uci)
        return board


@dataclass
class MatchSettings:
    """Everything one match needs; built from the CLI or by `oneply ladder`."""

    engine_a: EngineSpec
    engine_b: EngineSpec
    games: int = 10
    openings: list[Opening] = field(default_factory=lambda: [Opening()])
    concurrency: int = os.cpu_count() or 1
    timemargin: float = 0.1
    move_timeout: float = 60.0
    startup_timeout: float = 30.0
    adjudicator: str | None = DEFAULT_STOCKFISH
    adjudicate_nodes: int = 50_000
    resign_score: int = 1000
    resign_moves: int = 3
    syzygy: str | None = None
    sprt: tuple[float, float, float, float] | None = None
    pgn_path: str | None = None
    event: str = "oneply match"
    progress: bool = True


# --------------------------------------------------------------------------- results


@dataclass
class GameRecord:
    """One finished game, from engine A's point of view where it matters."""

    index: int
    pair: int
    a_white: bool
    white: str
    black: str
    result: str
    termination: str
    reason: str
    plies: int
    seconds: float
    opening: dict[str, Any]
    pgn: str = ""

    @property
    def score_a(self) -> float | None:
        """A's points, or None for an unterminated game (not counted)."""
        points = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(self.result)
        if points is None:
            return None
        return points if self.a_white else 1.0 - points

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("pgn")
        out["score_a"] = self.score_a
        return out


class Scoreboard:
    """Running W/D/L, pentanomial pairs and SPRT state; updated as games finish (any order)."""

    def __init__(self, sprt: tuple[float, float, float, float] | None = None) -> None:
        self.scores: dict[int, float | None] = {}
        self.sprt = sprt
        self.bounds = elo.sprt_bounds(sprt[2], sprt[3]) if sprt else None

    def add(self, record: GameRecord) -> None:
        self.scores[record.index] = record.score_a

    def wdl(self) -> tuple[int, int, int]:
        values = [s for s in self.scores.values() if s is not None]
        return values.count(1.0), values.count(0.5), values.count(0.0)

    def pairs(self) -> list[int]:
        """Pentanomial counts over pairs where both games have a result."""
        counts = [0] * 5
        for first in range(0, max(self.scores, default=-1) + 1, 2):
            a, b = self.scores.get(first), self.scores.get(first + 1)
            if a is not None and b is not None:
                counts[elo.pair_points(a, b)] += 1
        return counts

    def estimate(self) -> elo.EloEstimate:
        """Pentanomial when there is at least one complete pair, else trinomial."""
        pairs = self.pairs()
        return elo.pentanomial(pairs) if sum(pairs) else elo.trinomial(*self.wdl())

    def llr(self) -> float | None:
        if not self.sprt:
            return None
        return elo.sprt_llr_pentanomial(self.pairs(), self.sprt[0], self.sprt[1])

    def sprt_decision(self) -> str | None:
        llr = self.llr()
        return None if llr is None or self.bounds is None else elo.sprt_decision(llr, self.bounds)

    def summary(self) -> dict[str, Any]:
        wins, draws, losses = self.wdl()
        n = wins + draws + losses
        pairs = self.pairs()
        out: dict[str, Any] = {
            "games": n,
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "score": (wins + draws / 2) / n if n else None,
            "draw_ratio": elo.draw_ratio(wins, draws, losses),
            "los": elo.los_trinomial(wins, losses),
            "pentanomial": pairs,
            "elo_pentanomial": elo.pentanomial(pairs).to_dict() if sum(pairs) else None,
            "elo_trinomial": elo.trinomial(wins, draws, losses).to_dict(),
        }
        if self.sprt and self.bounds:
            out["sprt"] = {
                "elo0": self.sprt[0],
                "elo1": self.sprt[1],
                "alpha": self.sprt[2],
                "beta": self.sprt[3],
                "llr": self.llr(),
                "lower": self.bounds.lower,
                "upper": self.bounds.upper,
                "decision": self.sprt_decision(),
            }
        return out


@dataclass
class MatchResult:
    """What a match produced: games, statistics and the PIDs it spawned (for leak checks)."""

    settings: MatchSettings
    names: tuple[str, str]
    games: list[GameRecord]
    stats: dict[str, Any]
    seconds: float
    pids: list[int]
    stopped_by_sprt: str | None = None

    def to_json(self) -> dict[str, Any]:
        s = self.settings

        def engine(spec: EngineSpec, name: str) -> dict[str, Any]:
            return {
                "name": name,
                "command": list(spec.command),
                "options": dict(spec.options),
                "tc": asdict(spec.tc),
            }

        return {
            "engine_a": engine(s.engine_a, self.names[0]),
            "engine_b": engine(s.engine_b, self.names[1]),
            "settings": {
                "games": s.games,
                "concurrency": s.concurrency,
                "openings": len(s.openings),
                "timemargin": s.timemargin,
                "adjudicator": s.adjudicator,
                "resign_score": s.resign_score,
                "resign_moves": s.resign_moves,
                "syzygy": s.syzygy,
                "sprt": s.sprt,
            },
            "results": self.stats,
            "terminations": dict(Counter(g.reason for g in self.games)),
            "stopped_by_sprt": self.stopped_by_sprt,
            "seconds": self.seconds,
            "games_per_minute": 60.0 * len(self.games) / self.seconds if self.seconds else None,
            "games": [g.to_dict() for g in sorted(self.games, key=lambda g: g.index)],
        }


# --------------------------------------------------------------------------- engine processes


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
        try:
            self.transport, self.protocol = await chess.engine.UciProtocol.popen(
                list(self.spec.command), setpgrp=True, stderr=asyncio.subprocess.DEVNULL
            )
        except OSError as exc:
            raise EngineStartError(f"cannot run {shlex.join(self.spec.command)}: {exc}") from exc
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


class Adjudicator:
    """A shared Stockfish that confirms eval adjudications (started lazily, one search at once)."""

    def __init__(self, path: str | None, nodes: int, pids: list[int], timeout: float) -> None:
        self.path = path
        self.nodes = nodes
        self.pids = pids
        self.timeout = timeout
        self.engine: EngineProcess | None = None
        self.lock = asyncio.Lock()
        self.broken = path is None or not os.path.exists(path)

    async def white_cp(self, board: chess.Board) -> int | None:
        """Stockfish's eval in centipawns from White's side, or None if it is unavailable."""
        if self.broken:
            return None
        async with self.lock:
            try:
                if self.engine is None or not self.engine.alive:
                    self.engine = EngineProcess(EngineSpec((self.path or "",)), self.pids)
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


# --------------------------------------------------------------------------- one game


class GameOver(Exception):
    """Raised inside the move loop to end a game with a result and its reason."""

    def __init__(self, result: str, termination: str, reason: str) -> None:
        super().__init__(reason)
        self.result, self.termination, self.reason = result, termination, reason


def loss_for(color: chess.Color, termination: str, reason: str) -> GameOver:
    return GameOver("0-1" if color == chess.WHITE else "1-0", termination, reason)


def rules_outcome(board: chess.Board) -> GameOver | None:
    """Game end by the rules. Threefold and fifty moves count when they *happen*, not when a move
    could claim them (python-chess's ``claim_draw=True`` would also end a game when a repetition
    is merely available, which would cut games short)."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        text = outcome.termination.name.lower().replace("_", " ")
        return GameOver(outcome.result(), TERM_NORMAL, text)
    if board.is_repetition(3):
        return GameOver("1/2-1/2", TERM_NORMAL, "threefold repetition")
    if board.is_fifty_moves():
        return GameOver("1/2-1/2", TERM_NORMAL, "fifty moves")
    return None


def tablebase_outcome(board: chess.Board, tablebase: Any) -> GameOver | None:
    """Adjudicate from Syzygy WDL (cursed wins / blessed losses are draws by the 50-move rule)."""
    if tablebase is None or board.castling_rights or chess.popcount(board.occupied) > 7:
        return None
    try:
        wdl = tablebase.probe_wdl(board)
    except (KeyError, IndexError, chess.syzygy.MissingTableError):
        return None
    if wdl == 2:
        return loss_for(not board.turn, TERM_ADJUDICATION, "tablebase win")
    if wdl == -2:
        return loss_for(board.turn, TERM_ADJUDICATION, "tablebase win")
    return GameOver("1/2-1/2", TERM_ADJUDICATION, "tablebase draw")


def format_comment(info: chess.engine.InfoDict, seconds: float) -> str:
    """Per-move PGN comment in cutechess style: ``+0.35/12 0.104s`` (score from the mover)."""
    parts = []
    score = info.get("score")
    if score is not None:
        pov = score.relative
        if pov.is_mate():
            mate = pov.mate() or 0
            text = f"{'+' if mate > 0 else '-'}M{abs(mate)}"
        else:
            text = f"{(pov.score() or 0) / 100:+.2f}"
        depth = info.get("depth")
        parts.append(f"{text}/{depth}" if depth is not None else text)
    parts.append(f"{seconds:.3f}s")
    return " ".join(parts)


class EvalStreak:
    """Win adjudication: the last ``2 * moves`` plies all report a White-POV eval beyond the
    threshold in the same direction (so *both* engines agree), then Stockfish confirms."""

    def __init__(self, threshold: int, moves: int) -> None:
        self.threshold, self.need = threshold, 2 * moves
        self.history: list[int] = []

    def push(self, white_cp: int | None) -> None:
        self.history.append(0 if white_cp is None else white_cp)

    def reset(self) -> None:
        self.history.clear()

    def winner(self) -> chess.Color | None:
        if self.need <= 0 or len(self.history) < self.need:
            return None
        tail = self.history[-self.need :]
        if all(cp >= self.threshold for cp in tail):
            return chess.WHITE
        if all(cp <= -self.threshold for cp in tail):
            return chess.BLACK
        return None


@dataclass
class GameJob:
    index: int
    opening: Opening

    @property
    def pair(self) -> int:
        return self.index // 2

    @property
    def a_white(self) -> bool:
        return self.index % 2 == 0


class GameRunner:
    """Plays one game between two running engines and keeps the clocks."""

    def __init__(
        self,
        settings: MatchSettings,
        job: GameJob,
        white: EngineProcess,
        black: EngineProcess,
        adjudicator: Adjudicator,
        tablebase: Any,
    ) -> None:
        self.s, self.job = settings, job
        self.engines = {chess.WHITE: white, chess.BLACK: black}
        self.adjudicator, self.tablebase = adjudicator, tablebase
        self.board = job.opening.board()
        self.comments: list[str] = []
        tc = {c: e.spec.tc for c, e in self.engines.items()}
        self.tc = tc
        self.clock = {c: tc[c].base for c in tc}
        self.streak = EvalStreak(settings.resign_score, settings.resign_moves)
        #: engines to restart after this game (crashed, hung, or misbehaved)
        self.faulty: set[chess.Color] = set()

    def limit(self, color: chess.Color) -> chess.engine.Limit:
        tc = self.tc[color]
        limit = chess.engine.Limit(nodes=tc.nodes, time=tc.movetime)
        if tc.has_clock:
            # report both clocks as we keep them (the opponent's only if it has one)
            for side in (chess.WHITE, chess.BLACK):
                if self.tc[side].has_clock:
                    remaining = max(self.clock[side] or 0.0, 0.001)
                    if side == chess.WHITE:
                        limit.white_clock, limit.white_inc = remaining, self.tc[side].inc
                    else:
                        limit.black_clock, limit.black_inc = remaining, self.tc[side].inc
        return limit

    def deadline(self, color: chess.Color) -> float:
        """Seconds after which the mover has lost on time (or is deemed not answering)."""
        tc, margin = self.tc[color], self.s.timemargin
        options = [self.s.move_timeout]
        if tc.has_clock:
            options.append((self.clock[color] or 0.0) + margin)
        if tc.movetime is not None:
            options.append(tc.movetime + margin)
        return max(min(options), 0.001)

    async def move(self) -> None:
        """Ask the side to move for a move, check it, charge the clock and play it."""
        color = self.board.turn
        engine = self.engines[color]
        side = "White" if color == chess.WHITE else "Black"
        if not engine.alive or engine.protocol is None:
            self.faulty.add(color)
            raise loss_for(color, TERM_ABANDONED, f"{side} ({engine.name}) is not running")
        deadline = self.deadline(color)
        start = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                engine.protocol.play(
                    self.board,
                    self.limit(color),
                    info=chess.engine.INFO_BASIC | chess.engine.INFO_SCORE,
                    game=self.job.index,
                ),
                deadline,
            )
        except TimeoutError:
            self.faulty.add(color)
            reason = f"{side} ({engine.name}) loses on time: no move in {deadline:.2f}s"
            raise loss_for(color, TERM_TIME, reason) from None
        except chess.engine.EngineTerminatedError:
            self.faulty.add(color)
            code = engine.transport.get_returncode() if engine.transport else None
            raise loss_for(
                color, TERM_ABANDONED, f"{side} ({engine.name}) crashed (exit code {code})"
            ) from None
        except chess.engine.EngineError as exc:
            # python-chess raises this for an illegal or unparsable bestmove (and for other
            # protocol violations, which we score the same way)
            self.faulty.add(color)
            what = "an illegal move" if "illegal" in str(exc) else "invalid output"
            reason = f"{side} ({engine.name}) sent {what}: {exc}"
            raise loss_for(color, TERM_ILLEGAL, reason) from None
        elapsed = time.perf_counter() - start
        self.charge_clock(color, elapsed, side, engine.name)
        if not result.move or result.move not in self.board.legal_moves:
            self.faulty.add(color)
            raise loss_for(color, TERM_ILLEGAL, f"{side} ({engine.name}) sent no legal move")
        self.board.push(result.move)
        self.comments.append(format_comment(result.info, elapsed))
        score = result.info.get("score")
        self.streak.push(None if score is None else score.white().score(mate_score=MATE_CP))
        if score is None:
            # an engine without scores: let Stockfish speak for it (only when adjudicating)
            if self.s.resign_moves > 0 and not self.adjudicator.broken:
                self.streak.history[-1] = await self.adjudicator.white_cp(self.board) or 0

    def charge_clock(self, color: chess.Color, elapsed: float, side: str, name: str) -> None:
        tc = self.tc[color]
        if tc.movetime is not None and elapsed > tc.movetime + self.s.timemargin:
            raise loss_for(color, TERM_TIME, f"{side} ({name}) exceeded movetime ({elapsed:.3f}s)")
        if not tc.has_clock:
            return
        remaining = (self.clock[color] or 0.0) - elapsed
        if remaining < -self.s.timemargin:
            raise loss_for(color, TERM_TIME, f"{side} ({name}) loses on time")
        self.clock[color] = max(remaining, 0.0) + tc.inc

    async def eval_adjudication(self) -> GameOver | None:
        winner = self.streak.winner()
        if winner is None:
            return None
        confirm = await self.adjudicator.white_cp(self.board)
        if confirm is not None:
            agrees = confirm >= self.s.resign_score if winner else confirm <= -self.s.resign_score
            if not agrees:
                self.streak.reset()  # Stockfish disagrees: demand a fresh streak
                return None
        side = "White" if winner == chess.WHITE else "Black"
        return loss_for(not winner, TERM_ADJUDICATION, f"{side} wins by adjudication (eval)")

    async def play(self) -> GameOver:
        try:
            while True:
                end = rules_outcome(self.board) or tablebase_outcome(self.board, self.tablebase)
                if end is None and self.s.resign_moves > 0:
                    end = await self.eval_adjudication()
                if end is not None:
                    return end
                await self.move()
        except GameOver as over:
            return over


# --------------------------------------------------------------------------- PGN


def build_pgn(
    settings: MatchSettings,
    job: GameJob,
    runner: GameRunner,
    over: GameOver,
    started: dt.datetime,
) -> str:
    """PGN text with full headers, "book" comments on opening moves and per-move comments."""
    opening = job.opening
    game = chess.pgn.Game()
    root = opening.root()
    if opening.fen and root.fen() != chess.STARTING_FEN:
        game.setup(root)
    white, black = runner.engines[chess.WHITE], runner.engines[chess.BLACK]
    game.headers.update(
        {
            "Event": settings.event,
            "Site": "oneply",
            "Date": started.strftime("%Y.%m.%d"),
            "Round": str(job.index + 1),
            "White": white.name,
            "Black": black.name,
            "Result": over.result,
            "TimeControl": white.spec.tc.pgn_tag(),
            "Termination": over.termination,
            "PlyCount": str(len(runner.board.move_stack)),
        }
    )
    if black.spec.tc != white.spec.tc:
        game.headers["WhiteTimeControl"] = white.spec.tc.describe()
        game.headers["BlackTimeControl"] = black.spec.tc.describe()
    if opening.name:
        game.headers["Opening"] = opening.name
    node: chess.pgn.GameNode = game
    book = len(opening.moves)
    for ply, move in enumerate(runner.board.move_stack):
        comment = "book" if ply < book else runner.comments[ply - book]
        node = node.add_variation(move, comment=comment)
    node.comment = f"{node.comment}, {over.reason}" if node.comment else over.reason
    exporter = chess.pgn.StringExporter(headers=True, variations=True, comments=True)
    return game.accept(exporter)


# --------------------------------------------------------------------------- the match


class Match:
    """Runs the games of one match on ``concurrency`` slots, each with its own two engines."""

    def __init__(self, settings: MatchSettings, on_result: Callable[[GameRecord], None]) -> None:
        self.s = settings
        self.on_result = on_result
        self.pids: list[int] = []
        self.next_index = 0
        self.stop = False
        self.processes: list[EngineProcess] = []
        self.tablebase = open_tablebase(settings.syzygy)

    def next_job(self) -> GameJob | None:
        if self.stop or self.next_index >= self.s.games:
            return None
        index = self.next_index
        self.next_index += 1
        opening = self.s.openings[(index // 2) % len(self.s.openings)]
        return GameJob(index, opening)

    async def ensure(self, current: EngineProcess | None, spec: EngineSpec) -> EngineProcess:
        """A running engine for ``spec``: the current one if healthy, else a fresh start."""
        if current is not None and current.alive:
            return current
        if current is not None:
            await current.close(graceful=False)
        engine = EngineProcess(spec, self.pids)
        self.processes.append(engine)
        await engine.start(self.s.startup_timeout)
        return engine

    async def slot(self, adjudicator: Adjudicator) -> None:
        engines: dict[str, EngineProcess | None] = {"a": None, "b": None}
        specs = {"a": self.s.engine_a, "b": self.s.engine_b}
        try:
            while (job := self.next_job()) is not None:
                record = await self.play_job(job, engines, specs, adjudicator)
                self.on_result(record)
        finally:
            for engine in engines.values():
                if engine is not None:
                    await engine.close()

    async def play_job(
        self,
        job: GameJob,
        engines: dict[str, EngineProcess | None],
        specs: dict[str, EngineSpec],
        adjudicator: Adjudicator,
    ) -> GameRecord:
        started, t0 = dt.datetime.now(), time.perf_counter()
        white_key, black_key = ("a", "b") if job.a_white else ("b", "a")
        failed = []
        for key in (white_key, black_key):
            try:
                engines[key] = await self.ensure(engines[key], specs[key])
            except EngineStartError as exc:
                failed.append((key, str(exc)))
                engines[key] = None
        if failed:
            return self.start_failure(job, failed, started, time.perf_counter() - t0)
        white, black = engines[white_key], engines[black_key]
        assert white is not None and black is not None
        runner = GameRunner(self.s, job, white, black, adjudicator, self.tablebase)
        try:
            over = await runner.play()
        except Exception as exc:  # a bug of ours must not end the match; record it and go on
            traceback.print_exc()
            over = GameOver("*", TERM_UNTERMINATED, f"runner error: {exc!r}")
            runner.faulty.update((chess.WHITE, chess.BLACK))
        for color in runner.faulty:
            key = white_key if color == chess.WHITE else black_key
            engine = engines[key]
            if engine is not None:
                await engine.close(graceful=False)
            engines[key] = None
        pgn = build_pgn(self.s, job, runner, over, started)
        return GameRecord(
            index=job.index,
            pair=job.pair,
            a_white=job.a_white,
            white=white.name,
            black=black.name,
            result=over.result,
            termination=over.termination,
            reason=over.reason,
            plies=len(runner.board.move_stack),
            seconds=time.perf_counter() - t0,
            opening=asdict(job.opening),
            pgn=pgn,
        )

    def start_failure(
        self, job: GameJob, failed: list[tuple[str, str]], started: dt.datetime, seconds: float
    ) -> GameRecord:
        """An engine that cannot start loses; if neither starts, the game does not count."""
        white_key = "a" if job.a_white else "b"
        names = {"a": self.s.engine_a.label(), "b": self.s.engine_b.label()}
        if len(failed) == 2:
            result, reason = "*", "neither engine started: " + "; ".join(m for _, m in failed)
        else:
            key, message = failed[0]
            result = "0-1" if key == white_key else "1-0"
            reason = f"{names[key]} failed to start: {message}"
        return GameRecord(
            index=job.index,
            pair=job.pair,
            a_white=job.a_white,
            white=names[white_key],
            black=names["b" if white_key == "a" else "a"],
            result=result,
            termination=TERM_ABANDONED,
            reason=reason,
            plies=0,
            seconds=seconds,
            opening=asdict(job.opening),
        )

    async def run(self) -> None:
        adjudicator = Adjudicator(
            self.s.adjudicator if self.s.resign_moves > 0 else None,
            self.s.adjudicate_nodes,
            self.pids,
            self.s.startup_timeout,
        )
        slots = max(1, min(self.s.concurrency, self.s.games))
        try:
            await asyncio.gather(*(self.slot(adjudicator) for _ in range(slots)))
        finally:
            await adjudicator.close()
            for engine in self.processes:
                engine.kill()


def open_tablebase(path: str | None) -> Any:
    if not path:
        return None
    import chess.syzygy

    return chess.syzygy.open_tablebase(path)


async def identify(spec: EngineSpec, timeout: float, pids: list[int]) -> str:
    """Start an engine once, before the match, so a broken command or option fails fast."""
    engine = EngineProcess(spec, pids)
    try:
        await engine.start(timeout)
        return engine.name
    finally:
        await engine.close()


def run_match(settings: MatchSettings) -> MatchResult:
    """Play a whole match (blocking); raises EngineStartError if an engine is unusable."""
    from tqdm import tqdm

    pids: list[int] = []
    names = asyncio.run(_identify_both(settings, pids))
    # PGN headers and records use the same (disambiguated) names as the summary
    settings.engine_a = replace(settings.engine_a, name=names[0])
    settings.engine_b = replace(settings.engine_b, name=names[1])
    board = Scoreboard(settings.sprt)
    records: list[GameRecord] = []
    start = time.perf_counter()
    pgn_file = open(settings.pgn_path, "w") if settings.pgn_path else None  # noqa: SIM115
    bar = tqdm(
        total=settings.games,
        desc=f"{names[0]} vs {names[1]}",
        disable=not settings.progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    match: Match | None = None

    def on_result(record: GameRecord) -> None:
        records.append(record)
        board.add(record)
        if pgn_file is not None and record.pgn:
            pgn_file.write(record.pgn + "\n\n")
            pgn_file.flush()
        bar.update(1)
        bar.set_postfix_str(progress_line(board, time.perf_counter() - start))
        if match is not None and board.sprt_decision():
            match.stop = True

    match = Match(settings, on_result)
    try:
        with terminate_as_interrupt():
            asyncio.run(match.run())
    finally:
        bar.close()
        if pgn_file is not None:
            pgn_file.close()
        for engine in match.processes:
            engine.kill()
    return MatchResult(
        settings=settings,
        names=names,
        games=records,
        stats=board.summary(),
        seconds=time.perf_counter() - start,
        pids=pids + match.pids,
        stopped_by_sprt=board.sprt_decision(),
    )


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C, so a terminated runner still stops its engines (they run in
    their own process groups and would not get the signal themselves)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _identify_both(settings: MatchSettings, pids: list[int]) -> tuple[str, str]:
    a = await identify(settings.engine_a, settings.startup_timeout, pids)
    b = await identify(settings.engine_b, settings.startup_timeout, pids)
    if a == b:
        a, b = f"{a} (A)", f"{b} (B)"
    return a, b


def progress_line(board: Scoreboard, seconds: float) -> str:
    wins, draws, losses = board.wdl()
    n = wins + draws + losses
    if not n:
        return ""
    est = board.estimate()
    rate = 60.0 * n / seconds if seconds > 0 else 0.0
    text = (
        f"W/D/L {wins}/{draws}/{losses} score {(wins + draws / 2) / n:.3f} "
        f"Elo {fmt_elo(est)} {rate:.1f} games/min"
    )
    llr = board.llr()
    if llr is not None and board.bounds is not None:
        text += f" LLR {llr:.2f} [{board.bounds.lower:.2f}, {board.bounds.upper:.2f}]"
    return text


def fmt_elo(est: elo.EloEstimate) -> str:
    """``+12.3 ± 45.6``; the interval itself when "±" would mislead (a bound at 0% or 100%)."""
    limit = elo.score_to_elo(1.0) - 1.0
    if not (math.isfinite(est.lower) and math.isfinite(est.upper)):
        return f"{est.elo:+.1f} ± inf"
    if est.lower <= -limit or est.upper >= limit:
        return f"{est.elo:+.1f} [{est.lower:+.0f}, {est.upper:+.0f}]"
    return f"{est.elo:+.1f} ± {est.pm:.1f}"


# --------------------------------------------------------------------------- openings


def load_openings(
    path: str | None, pairs: int, plies: int | None, seed: int, order: str = "random"
) -> list[Opening]:
    """Openings for ``pairs`` game pairs from a polyglot book, an EPD or a PGN file."""
    if path is None:
        path = DEFAULT_BOOK if os.path.exists(DEFAULT_BOOK) else None
    if path is None:
        return [Opening()]
    rng = random.Random(seed)
    suffix = Path(path).suffix.lower()
    if suffix == ".bin":
        openings = book_openings(path, pairs, plies or DEFAULT_BOOK_PLIES, rng)
    elif suffix == ".epd":
        openings = epd_openings(path)
    elif suffix == ".pgn":
        openings = pgn_openings(path, plies)
    else:
        raise ValueError(f"unknown openings format {suffix!r}: use .bin, .epd or .pgn")
    if not openings:
        raise ValueError(f"no openings found in {path}")
    if order == "random" and suffix != ".bin":
        rng.shuffle(openings)
    return openings


def book_openings(path: str, pairs: int, plies: int, rng: random.Random) -> list[Opening]:
    """Distinct weighted random walks of ``plies`` moves through a polyglot book."""
    found: dict[str, Opening] = {}
    with chess.polyglot.open_reader(path) as reader:
        for _ in range(max(pairs, 1) * 20):
            board = chess.Board()
            for _ in range(plies):
                try:
                    entry = reader.weighted_choice(board, random=rng)
                except IndexError:
                    break
                board.push(entry.move)
            if board.move_stack and not board.is_game_over():
                key = board.epd()
                found.setdefault(key, Opening(moves=tuple(m.uci() for m in board.move_stack)))
            if len(found) >= pairs:
                break
    return list(found.values())


def epd_openings(path: str) -> list[Opening]:
    openings = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        board, ops = chess.Board.from_epd(line)
        name = ops.get("id") if isinstance(ops.get("id"), str) else None
        openings.append(Opening(fen=board.fen(), name=name))
    return openings


def pgn_openings(path: str, plies: int | None) -> list[Opening]:
    """Each game's start position and its first ``plies`` mainline moves (all if None)."""
    openings = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            moves = [m.uci() for m in game.mainline_moves()][:plies]
            root = game.board()
            fen = None if root.fen() == chess.STARTING_FEN else root.fen()
            name = ", ".join(
                game.headers[k] for k in ("ECO", "Opening", "Variation") if k in game.headers
            )
            if moves or fen:
                openings.append(Opening(fen=fen, moves=tuple(moves), name=name or None))
    return openings


# --------------------------------------------------------------------------- CLI


def parse_tc(text: str) -> TimeControl:
    """``BASE[+INC]`` in seconds; BASE may be ``M:SS``. E.g. ``10+0.1``, ``1:00+0.6``, ``60``."""
    base_text, _, inc_text = text.partition("+")
    if ":" in base_text:
        minutes, _, seconds = base_text.partition(":")
        base = 60 * float(minutes) + float(seconds)
    else:
        base = float(base_text)
    inc = float(inc_text) if inc_text else 0.0
    if base <= 0 or inc < 0:
        raise argparse.ArgumentTypeError(f"bad time control {text!r}")
    return TimeControl(base=base, inc=inc)


def parse_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"option must be NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Time control, opening and runner options shared by `match` and `ladder`."""
    tc = parser.add_argument_group("time control (default --tc 10+0.1)")
    tc.add_argument("--tc", type=parse_tc, help="clock BASE+INC in seconds, e.g. 10+0.1")
    tc.add_argument("--movetime", type=float, metavar="MS", help="fixed time per move (ms)")
    tc.add_argument("--nodes", type=int, help="node budget per move for both engines")
    tc.add_argument(
        "--timemargin",
        type=float,
        default=100.0,
        metavar="MS",
        help="overrun tolerated before a time forfeit (default 100)",
    )
    tc.add_argument(
        "--move-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="without a clock: an engine silent this long loses on time (default 60)",
    )
    tc.add_argument("--startup-timeout", type=float, default=30.0, metavar="S")
    op = parser.add_argument_group("openings (each played twice, colours swapped)")
    op.add_argument(
        "--openings",
        metavar="FILE",
        help=f"polyglot .bin (random weighted walk), .epd or .pgn (default {DEFAULT_BOOK})",
    )
    op.add_argument("--plies", type=int, help="book walk length / PGN moves used (default 8 / all)")
    op.add_argument("--opening-order", choices=("random", "sequential"), default="random")
    op.add_argument("--seed", type=int, default=1, help="opening selection seed (default 1)")
    run = parser.add_argument_group("runner")
    run.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, metavar="K")
    run.add_argument("--pgn", metavar="FILE", help="write all games here")
    run.add_argument("--json", metavar="FILE", help="write results and per-game records here")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    adj = parser.add_argument_group("adjudication")
    adj.add_argument("--adjudicator", default=DEFAULT_STOCKFISH, help="Stockfish for eval checks")
    adj.add_argument("--adjudicate-nodes", type=int, default=50_000, metavar="N")
    adj.add_argument(
        "--resign-score", type=int, default=1000, metavar="CP", help="win threshold (1000)"
    )
    adj.add_argument(
        "--resign-moves",
        type=int,
        default=3,
        metavar="N",
        help="moves per engine beyond the threshold; 0 turns eval adjudication off (3)",
    )
    adj.add_argument("--syzygy", metavar="DIR", help="Syzygy tablebase directory (optional)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "Engines are command lines (split like a shell would). UCI options go with\n"
        "--option-a/--option-b NAME=VALUE (repeatable; --option sets both), e.g.\n"
        '  oneply match "oneply uci" /usr/games/stockfish --option-a ModelFile=m.onnx \\\n'
        '      --option-b "Skill Level=3" --games 100 --tc 10+0.1 --pgn out.pgn\n'
        "Game 2k and 2k+1 share an opening with colours swapped; Elo is reported from\n"
        "engine A's side with a 95% interval from pentanomial (pair) statistics.\n"
        "A crash, illegal move or time forfeit loses the game for that engine."
    )
    parser.add_argument("engine_a", help="command line of engine A")
    parser.add_argument("engine_b", help="command line of engine B")
    parser.add_argument("--games", type=int, default=10, help="number of games (default 10)")
    parser.add_argument("--name-a", help="display name of engine A (default: its UCI id)")
    parser.add_argument("--name-b", help="display name of engine B")
    for flag, text in (("", "both engines"), ("-a", "engine A"), ("-b", "engine B")):
        parser.add_argument(
            f"--option{flag}",
            type=parse_option,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"UCI option for {text} (repeatable)",
        )
    parser.add_argument("--nodes-a", type=int, help="node budget for engine A only")
    parser.add_argument("--nodes-b", type=int, help="node budget for engine B only")
    parser.add_argument(
        "--sprt",
        nargs=4,
        type=float,
        metavar=("ELO0", "ELO1", "ALPHA", "BETA"),
        help="stop early when the pentanomial GSPRT accepts H0 or H1",
    )
    parser.add_argument("--event", default="oneply match", help="PGN Event tag")
    add_engine_arguments(parser)


def time_control(args: argparse.Namespace, nodes: int | None = None) -> TimeControl:
    """The engine's control from --tc/--movetime/--nodes; a clock by default."""
    tc: TimeControl = args.tc or TimeControl()
    movetime = args.movetime / 1000.0 if args.movetime else None
    nodes = nodes if nodes is not None else args.nodes
    if args.tc is None and movetime is None and nodes is None:
        tc = TimeControl(base=10.0, inc=0.1)
    return TimeControl(base=tc.base, inc=tc.inc, movetime=movetime, nodes=nodes)


def common_settings(
    args: argparse.Namespace, a: EngineSpec, b: EngineSpec, games: int, seed: int | None = None
) -> MatchSettings:
    """MatchSettings from the shared CLI options (openings are loaded here)."""
    pairs = (games + 1) // 2
    seed = args.seed if seed is None else seed
    openings = load_openings(args.openings, pairs, args.plies, seed, args.opening_order)
    return MatchSettings(
        engine_a=a,
        engine_b=b,
        games=games,
        openings=openings,
        concurrency=max(1, args.concurrency),
        timemargin=args.timemargin / 1000.0,
        move_timeout=args.move_timeout,
        startup_timeout=args.startup_timeout,
        adjudicator=args.adjudicator,
        adjudicate_nodes=args.adjudicate_nodes,
        resign_score=args.resign_score,
        resign_moves=args.resign_moves,
        syzygy=args.syzygy,
        pgn_path=args.pgn,
        progress=not args.quiet,
    )


def settings_from_args(args: argparse.Namespace) -> MatchSettings:
    a = EngineSpec(
        command=tuple(shlex.split(args.engine_a)),
        options=tuple(args.option + args.option_a),
        tc=time_control(args, args.nodes_a),
        name=args.name_a,
    )
    b = EngineSpec(
        command=tuple(shlex.split(args.engine_b)),
        options=tuple(args.option + args.option_b),
        tc=time_control(args, args.nodes_b),
        name=args.name_b,
    )
    settings = common_settings(args, a, b, args.games)
    settings.sprt = tuple(args.sprt) if args.sprt else None  # type: ignore[assignment]
    settings.event = args.event
    return settings


def summary_text(result: MatchResult) -> str:
    """The final table: W/D/L, score, Elo with both interval kinds, LOS, SPRT, terminations."""
    s = result.stats
    a, b = result.names
    lines = [
        f"Results of {a} vs {b} ({result.settings.engine_a.tc.describe()} vs "
        f"{result.settings.engine_b.tc.describe()}), {s['games']} games",
        f"  W/D/L (A)      {s['wins']}/{s['draws']}/{s['losses']}"
        + (f"  score {s['score']:.3f}" if s["score"] is not None else ""),
    ]
    for label, key in (("pentanomial", "elo_pentanomial"), ("trinomial", "elo_trinomial")):
        est = s.get(key)
        if est:
            text = fmt_elo(elo.EloEstimate(**est_fields(est)))
            if "[" not in text:
                text += f" (95% [{est['lower']:+.1f}, {est['upper']:+.1f}])"
            lines.append(f"  Elo {label:<11} {text}, nElo {est['nelo']:+.1f}")
    lines.append(f"  LOS {100 * s['los']:.1f}%  draw ratio {100 * s['draw_ratio']:.1f}%")
    lines.append(f"  pairs [0, ½, 1, 1½, 2 points] {s['pentanomial']}")
    if "sprt" in s:
        sp = s["sprt"]
        lines.append(
            f"  SPRT ({sp['elo0']:g}, {sp['elo1']:g}): LLR {sp['llr']:.2f} "
            f"[{sp['lower']:.2f}, {sp['upper']:.2f}] → {sp['decision'] or 'undecided'}"
        )
    rate = 60.0 * len(result.games) / result.seconds if result.seconds else 0.0
    lines.append(f"  {result.seconds:.1f}s, {rate:.1f} games/min")
    for reason, count in Counter(g.reason for g in result.games).most_common():
        lines.append(f"  {count:4d} × {reason}")
    return "\n".join(lines)


def est_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An EloEstimate's fields back from its ``to_dict`` form."""
    return {k: v for k, v in data.items() if k != "pm"}


def run(args: argparse.Namespace) -> int:
    if args.games < 1:
        print("--games must be at least 1", file=sys.stderr)
        return 2
    try:
        settings = settings_from_args(args)
    except (ValueError, OSError) as exc:
        print(f"oneply match: {exc}", file=sys.stderr)
        return 2
    try:
        result = run_match(settings)
    except EngineStartError as exc:
        print(f"oneply match: engine unusable: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; engines stopped", file=sys.stderr)
        return 130
    print(summary_text(result))
    if args.json:
        write_json(args.json, result.to_json())
    return 0


def write_json(path: str, data: dict[str, Any]) -> None:
    """Strict JSON: infinite interval bounds (too few games) become null."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(_finite(data), indent=2, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

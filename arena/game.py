"""One game between two engine processes: the clock, the rules, adjudication.

The runner keeps the clock itself (wall time per move) and turns any misbehaviour (crash,
illegal move, time forfeit) into a loss for the offending engine, never a runner crash.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import chess.syzygy

from oneply.arena.engines import Adjudicator, EngineProcess
from oneply.arena.settings import (
    MATE_CP,
    TERM_ABANDONED,
    TERM_ADJUDICATION,
    TERM_ILLEGAL,
    TERM_NORMAL,
    TERM_TIME,
    MatchSettings,
    Opening,
)


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


def tablebase_outcome(
    board: chess.Board, tablebase: chess.syzygy.Tablebase | None
) -> GameOver | None:
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
        tablebase: chess.syzygy.Tablebase | None,
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

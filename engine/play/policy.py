"""The move policy: from the model's scores and the game so far to the move to play.

One policy serves `oneply uci`, `oneply analyse` and the bot. The engine scores every legal
move (engine/play/inference.py); the policy turns those scores into a decision and records which
rule decided it (`Decision.rule`), so users can see why a move was played.

A searchless engine needs a few rules to play whole games well (the paper's engine used
repetition damping, opening sampling and the Stockfish fallback). In order:

1. **Score adjustments** (before any choice; `Decision.scores` holds the adjusted scores).

   - ``RepetitionDamping`` (on): a move after which a threefold-repetition claim is possible
     (python-chess ``can_claim_threefold_repetition`` on the position after the move, which
     includes the opponent claiming with their next move) or fivefold repetition has occurred
     gets win 0.5. The winning side then avoids repeating; the losing side welcomes the draw.
     The history is the board's move stack, so callers pass the whole game.
   - ``StalemateAsDraw`` (on): a move after which the game is drawn by rule, or the opponent
     may claim a draw, gets win 0.5: stalemate, insufficient material (python-chess
     ``is_insufficient_material``), or a halfmove clock of 100 plies or more (fifty-move
     claim). A checkmating move is never adjusted. The model never saw these positions as
     terminal, so it scores a stalemating move by the material on the board.

2. ``MateInOne`` (on): when a legal move checkmates, play it (rule ``mate-in-one``).

3. **Mate-consistency fallback** ``MateFallback`` (on): when the top ``fallback_top`` (5)
   moves all have win > ``FallbackThreshold`` (0.9) — every candidate "wins", and the model
   cannot tell progress from shuffling — Stockfish is asked which of those moves is best
   (``go searchmoves``, limited by ``FallbackNodes``/``FallbackMs`` and by the clock) and its
   choice is played (rule ``stockfish``). With fewer than five legal moves, all of them must
   exceed the threshold (and there must be at least two). Stockfish is found at
   ``StockfishPath``, else by :func:`oneply.engine.stockfish.find_stockfish`; it is started once,
   in the background, the first time a game gets close to won (best win > 0.9), and kept. If it
   is missing, crashes or does not answer in time, one warning is logged (and passed to the
   ``warn`` hook, which the UCI engine turns into ``info string``), the fallback is switched
   off and the model's best move is played. A crashed or hung Stockfish is retried (a fresh
   process) after the next ``new_game()``; a missing one only after ``StockfishPath`` or
   ``MateFallback`` is set again.

   Why 0.9 and not the paper's 0.99: the training games stop once the best move is worth 0.9
   for six plies (``generate --decided-win``), so a trained model never learns to say more than
   "decided": it scores a plainly won ending, K+Q against K, just above 0.9, so at 0.99 the
   fallback almost never fires and such endings drift into fifty-move draws. At 0.9 it
   converts far more won positions (docs/uci.md, "What the rules are worth").

4. **Opening sampling** ``SampleMoves`` (5), ``Temperature`` (0.005): while the engine has
   played fewer than ``SampleMoves`` moves in this game, the move is drawn from
   softmax(win / Temperature) (rule ``sample``). "Moves played" = moves in the board's move
   stack made by the side to move = ``len(board.move_stack) // 2``, whatever the root FEN
   or its fullmove number: a game from a FEN counts from its first move. Temperature 0 or
   SampleMoves 0 turn sampling off. ``Seed`` (-1: fresh entropy; the environment variable
   ONEPLY_SEED sets the default) makes runs reproducible; the generator is seeded when the
   policy is built or the option is set, not per game.

5. Otherwise the best adjusted move (rule ``best``; ``repetition-damping`` or
   ``stalemate-as-draw`` when that adjustment changed the choice).

**Clock safety**: with a ``deadline`` (a time.monotonic() instant), ``choose`` returns at
least ``SAFETY_S`` before it. Stockfish gets at most half the remaining time as its search
limit and is abandoned (and killed) when it has not answered within 3/4 of it; with under
``MIN_FALLBACK_S`` left the fallback is skipped. Everything else the policy does is a few
milliseconds of python-chess move generation.

MateInOne and StalemateAsDraw are on by default because they only replace the model's guess
by the exact game value of the move (a mate is a win, a stalemate or dead position a draw):
they cannot make a correct choice worse. What the rules are worth in play is measured by
arena/policy_eval.py; the numbers are in docs/uci.md ("What the rules are worth").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import chess
import chess.engine
import numpy as np

from oneply.engine.facts.checks import gives_mate
from oneply.engine.model.values import sample_softmax
from oneply.engine.play.inference import MoveScore
from oneply.engine.play.policy_config import BY_UCI, PolicyConfig, UciOptionSpec, uci_options
from oneply.engine.stockfish import (
    LOOKUP_TEXT,
    START_TIMEOUT_S,
    StockfishStartError,
    close_stockfish,
    find_stockfish,
    open_stockfish,
    start_message,
)

log = logging.getLogger("oneply.policy")

ENV_SEED = "ONEPLY_SEED"
DRAW = 0.5
#: choose() aims to return this long before the deadline (time to print bestmove)
SAFETY_S = 0.05
#: share of the time left that Stockfish may take before it is abandoned; the rest is slack
#: for a loaded machine (a thread waking from a timed wait can be scheduled late)
HARD_SHARE = 0.75
#: below this much time left the fallback is not tried at all
MIN_FALLBACK_S = 0.05
#: without a deadline, a Stockfish that is this much later than its own limit is hung
HANG_SLACK_S = 2.0
#: a game whose best move is scored above this starts Stockfish in the background
WARM_UP_WIN = 0.9
#: longest wait for Stockfish to start (it normally starts in well under a second)


@dataclass(frozen=True)
class Decision:
    """The chosen move, its (adjusted) expected win, and the rule that chose it.

    `scores` are the adjusted scores of every legal move, best first."""

    move: chess.Move
    win: float
    rule: str
    scores: tuple[MoveScore, ...] = ()


# --- score adjustments ----------------------------------------------------------------------


def _position_key(board: chess.Board) -> str:
    """What makes positions "the same" for repetition: EPD with legal en passant only."""
    return board.epd()


def _history_has_repetition(board: chess.Board) -> bool:
    """Whether a position since the last irreversible move occurred at least twice.

    A move can only allow a threefold claim when this holds (the position after it, or one
    the opponent can reach from there, must already have occurred twice), so this cheap test
    spares the per-move python-chess checks in almost every position.
    """
    counts = Counter([_position_key(board)])
    undone: list[chess.Move] = []
    while board.move_stack:
        undone.append(board.pop())
        if board.is_irreversible(undone[-1]):
            break
        counts[_position_key(board)] += 1
    while undone:
        board.push(undone.pop())
    return max(counts.values()) >= 2


def _allows_repetition_claim(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_fivefold_repetition() or board.can_claim_threefold_repetition()
    finally:
        board.pop()


def _is_draw_after(board: chess.Board, move: chess.Move) -> bool:
    """Whether the game is drawn (or the opponent may claim the fifty-move draw) after move."""
    board.push(move)
    try:
        if board.is_checkmate():
            return False
        return (
            board.is_stalemate() or board.is_insufficient_material() or board.halfmove_clock >= 100
        )
    finally:
        board.pop()


def adjust_scores(
    board: chess.Board, scores: Sequence[MoveScore], config: PolicyConfig
) -> tuple[list[MoveScore], dict[chess.Move, str]]:
    """Scores with draws set to 0.5, best first (stable), and which rule adjusted which move."""
    probe = board.copy()
    reasons: dict[chess.Move, str] = {}
    damp = config.repetition_damping and _history_has_repetition(probe)
    for score in scores:
        if damp and _allows_repetition_claim(probe, score.move):
            reasons[score.move] = "repetition-damping"
        elif config.stalemate_as_draw and _is_draw_after(probe, score.move):
            reasons[score.move] = "stalemate-as-draw"
    adjusted = [replace(s, win=DRAW) if s.move in reasons else s for s in scores]
    adjusted.sort(key=lambda s: -s.win)
    return adjusted, reasons


def own_moves_played(board: chess.Board) -> int:
    """Moves the side to move has played in this game (from the stack, not the FEN)."""
    return len(board.move_stack) // 2


def _seconds_left(deadline: float | None) -> float:
    return math.inf if deadline is None else deadline - time.monotonic() - SAFETY_S


# --- the Stockfish fallback -----------------------------------------------------------------


class StockfishFallback:
    """One Stockfish process, started in the background on first need and kept, that picks
    the best of a few moves within a hard time limit.

    Failures never raise: they switch the fallback off (`broken`) and report once through
    `warn`; `reset()` closes the process and allows a retry.
    """

    def __init__(self, path: str, warn: Callable[[str, str], None]):
        self.path = path
        self._warn = warn
        self._starting: concurrent.futures.Future[chess.engine.SimpleEngine] | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.broken: str | None = None  # "missing", "crashed" or "timeout"

    def warm_up(self) -> None:
        """Start Stockfish in the background (no-op when started or broken)."""
        if self._starting is not None or self.broken:
            return
        executable = find_stockfish(self.path)
        if executable is None:
            where = self.path or LOOKUP_TEXT
            self._fail("missing", start_message(f"not found ({where}); set StockfishPath"))
            return
        self._pool = concurrent.futures.ThreadPoolExecutor(1, "oneply-stockfish-start")
        self._starting = self._pool.submit(open_stockfish, executable, None, START_TIMEOUT_S)

    def best_among(
        self,
        board: chess.Board,
        moves: Sequence[chess.Move],
        limit: chess.engine.Limit,
        deadline: float | None,
        game: object = None,
    ) -> chess.Move | None:
        """Stockfish's choice among `moves`, or None (too little time, or a failure)."""
        self.warm_up()
        engine = self._engine(deadline)
        if engine is None:
            return None
        left = _seconds_left(deadline)
        if left < MIN_FALLBACK_S:
            return None
        capped = min(limit.time or math.inf, left / 2)
        search_s: float | None = capped
        if math.isinf(capped):  # no clock and no time limit: nodes only
            search_s = None if limit.nodes else 0.1
        limit = chess.engine.Limit(nodes=limit.nodes, time=search_s)
        hard_s = min(left * HARD_SHARE, (search_s or START_TIMEOUT_S) + HANG_SLACK_S)
        coro = engine.protocol.play(board, limit, root_moves=list(moves), game=game)
        future = asyncio.run_coroutine_threadsafe(coro, engine.protocol.loop)
        try:
            result = future.result(timeout=hard_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._fail("timeout", f"Stockfish gave no move within {hard_s * 1000:.0f} ms")
            return None
        except Exception as error:  # engine died or broke the protocol: never lose the move
            self._fail("crashed", f"Stockfish failed ({type(error).__name__}: {error})")
            return None
        return result.move if result.move in moves else None

    def _engine(self, deadline: float | None) -> chess.engine.SimpleEngine | None:
        """The started engine, waiting for the start at most half the time left."""
        if self._starting is None:
            return None
        wait_s = min(START_TIMEOUT_S, max(0.0, _seconds_left(deadline) / 2))
        try:
            return self._starting.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            return None  # still starting; try again next move
        except StockfishStartError as error:
            self._fail("crashed", str(error))
            return None
        except Exception as error:
            self._fail("crashed", start_message(f"{type(error).__name__}: {error}"))
            return None

    def _fail(self, kind: str, message: str) -> None:
        self.broken = kind
        self._warn(kind, f"{message}; mate fallback off, playing the model's moves")
        self.close()

    def reset(self) -> None:
        """Close the process and forget a failure: the next call starts a fresh Stockfish."""
        self.close()
        self.broken = None

    def close(self) -> None:
        """Kill the process (never blocks on a hung engine)."""
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.add_done_callback(_close_started_engine)
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def _close_started_engine(future: concurrent.futures.Future[chess.engine.SimpleEngine]) -> None:
    if not future.cancelled() and future.exception() is None:
        close_stockfish(future.result(), kill=True)  # never blocks on a hung engine


# --- the policy -----------------------------------------------------------------------------


class MovePolicy:
    """Chooses moves. `board` carries the game's move stack (repetitions are known from it);
    `scores` are the model's scores for every legal move, best first; `deadline` is a
    time.monotonic() instant by which the decision must be made, or None.

    `warn` receives the (rare, one-off) warnings, e.g. a missing Stockfish; they are also
    logged on the "oneply.policy" logger.
    """

    #: UCI options this policy adds: (name, type, default, min, max); see engine/uci/engine.py
    UCI_OPTIONS: tuple[UciOptionSpec, ...] = uci_options()

    def __init__(
        self, config: PolicyConfig | None = None, warn: Callable[[str], None] | None = None
    ):
        self.config = config or PolicyConfig()
        self.on_warning = warn
        self._warned: set[str] = set()
        self._games = 0
        self._rng = self._new_rng()
        self._stockfish = StockfishFallback(self.config.stockfish_path, self._warn_once)

    # -- configuration

    def set_option(self, name: str, value: str) -> bool:
        """Apply a UCI option by name (case-insensitive); False when the policy has no such
        option. An invalid or out-of-range value raises PolicyOptionError (naming the option)
        and leaves the setting as it was."""
        option = BY_UCI.get(name.strip().lower())
        if option is None:
            return False
        setattr(self.config, option.key, option.from_text(value))
        if option.key == "seed":
            self._rng = self._new_rng()
        if option.key in ("stockfish_path", "mate_fallback"):
            self._stockfish.close()
            self._stockfish = StockfishFallback(self.config.stockfish_path, self._warn_once)
            self._warned.clear()
        return True

    def _new_rng(self) -> np.random.Generator:
        seed = self.config.seed
        if seed is not None and seed < 0:
            seed = None  # -1 (UCI's "none") means fresh entropy, like null
        if seed is None and os.environ.get(ENV_SEED, "").strip():
            seed = int(os.environ[ENV_SEED])
        return np.random.default_rng(seed)

    # -- choosing

    def choose_move(self, board: chess.Board, scores: Sequence[MoveScore]) -> chess.Move:
        """Only the move (what the puzzle runner asks for)."""
        return self.choose(board, scores).move

    def choose(
        self, board: chess.Board, scores: Sequence[MoveScore], deadline: float | None = None
    ) -> Decision:
        """The move to play; see the module docstring for the rules, in order."""
        if not scores:
            return Decision(chess.Move.null(), 0.0, "no-legal-move")
        ranked, reasons = adjust_scores(board, scores, self.config)
        if self.config.mate_in_one:
            mate = next((s for s in ranked if gives_mate(board, s.move)), None)
            if mate is not None:
                return Decision(mate.move, 1.0, "mate-in-one", tuple(ranked))
        decision = (
            self._fallback(board, ranked, deadline)
            or self._sample(board, ranked)
            or Decision(ranked[0].move, ranked[0].win, "best", tuple(ranked))
        )
        if decision.rule == "best":
            changed_by = reasons.get(scores[0].move) or reasons.get(decision.move)
            if changed_by and decision.move != scores[0].move:
                decision = replace(decision, rule=changed_by)
        return decision

    def _fallback(
        self, board: chess.Board, ranked: list[MoveScore], deadline: float | None
    ) -> Decision | None:
        config = self.config
        if not config.mate_fallback or self._stockfish.broken:
            return None
        if ranked[0].win > WARM_UP_WIN:
            self._stockfish.warm_up()
        top = ranked[: max(1, config.fallback_top)]
        if len(top) < 2 or any(s.win <= config.fallback_threshold for s in top):
            return None
        limit = chess.engine.Limit(
            nodes=config.fallback_nodes or None,
            time=config.fallback_ms / 1000 if config.fallback_ms else None,
        )
        move = self._stockfish.best_among(
            board, [s.move for s in top], limit, deadline, game=self._games
        )
        if move is None:
            return None
        win = next(s.win for s in top if s.move == move)
        return Decision(move, win, "stockfish", tuple(ranked))

    def _sample(self, board: chess.Board, ranked: list[MoveScore]) -> Decision | None:
        config = self.config
        if config.temperature <= 0 or own_moves_played(board) >= config.sample_moves:
            return None
        wins = np.array([s.win for s in ranked], dtype=np.float64)
        pick = ranked[sample_softmax(wins, config.temperature, self._rng)]
        return Decision(pick.move, pick.win, "sample", tuple(ranked))

    # -- lifecycle and reporting

    def new_game(self) -> None:
        """Forget per-game state (UCI ucinewgame, a new bot game); retry a Stockfish that
        crashed or hung (a missing one stays off until StockfishPath/MateFallback is set)."""
        self._games += 1
        if self._stockfish.broken in ("crashed", "timeout"):
            self._stockfish.reset()

    def close(self) -> None:
        """Release resources (the fallback Stockfish)."""
        self._stockfish.close()

    def _warn(self, message: str) -> None:
        log.warning(message)
        if self.on_warning is not None:
            self.on_warning(message)

    def _warn_once(self, kind: str, message: str) -> None:
        """Warn about a Stockfish failure once per kind; repeats go to the debug log."""
        if kind in self._warned:
            log.debug(message)
            return
        self._warned.add(kind)
        self._warn(message)

"""The think-time budget: how long one move may take, for `oneply uci` and the bot alike.

One formula, so an engine in a GUI and the bot on Lichess spend their clock the same way:

    usable = left − reserve · max(0, overhead − increment)
    budget = min(usable / moves_to_go + 3/4 · increment, usable / 3) − overhead

clamped to [MIN_THINK_MS, MAX_THINK_MS]. `moves_to_go` is UCI's `movestogo` when given, else
DEFAULT_MOVES_TO_GO. A third of the clock at most keeps a reserve even when the increment is
large compared with what is left; three quarters of the increment leaves a quarter of it for
lag. The overhead is what each move costs beyond thinking: UCI's `Move Overhead` (GUI and
pipe latency), or what the bot measures its moves to cost outside the search (Lichess
compensates network lag, not the bot's own work). Each move's budget pays its own overhead;
in sudden death (no `movestogo`), `reserve` = SUDDEN_DEATH_RESERVE_MOVES moves' overhead is
also set aside for the moves after the assumed `moves_to_go`: the budget shrinks with the
clock, the per-move cost does not, and a long 1+0 game with the look-ahead on ran out of time
on it (simulated at 55 ms a move: flag after ~176 moves before, ~300 with the reserve). An
increment at least as large as the overhead pays for it and reserves nothing; with
`movestogo` the clock is refilled and nothing beyond the moves' own overhead is needed.
oneply's forward pass takes milliseconds: the budget bounds what can take longer, the
look-ahead and the Stockfish fallbacks (engine/play/policy.py, engine/play/fallback.py), and
MAX_THINK_MS keeps a long clock from being spent on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: moves assumed left in the game when the clock does not say (UCI `movestogo`)
DEFAULT_MOVES_TO_GO = 30
#: share of the increment that may be spent on this move
INCREMENT_SHARE = 0.75
#: never more than this share of the time left
MAX_CLOCK_SHARE = 1 / 3
#: moves whose overhead is set aside when no `movestogo` says when the clock is refilled
SUDDEN_DEATH_RESERVE_MOVES = 100
#: a budget is never below this (time to answer at all) ...
MIN_THINK_MS = 1.0
#: ... nor above this: a searchless engine never needs more
MAX_THINK_MS = 10_000.0


def think_budget_ms(
    left_ms: float | None,
    increment_ms: float | None = 0,
    moves_to_go: int | None = None,
    overhead_ms: float = 0,
) -> float | None:
    """Milliseconds this move may use, or None when no clock limits it (correspondence,
    unlimited, UCI `go` without a clock)."""
    if left_ms is None:
        return None
    increment = max(0.0, float(increment_ms or 0))
    if moves_to_go is not None and moves_to_go > 0:
        moves, reserve = moves_to_go, 0
    else:  # sudden death
        moves, reserve = DEFAULT_MOVES_TO_GO, SUDDEN_DEATH_RESERVE_MOVES
    usable = max(0.0, float(left_ms)) - reserve * max(0.0, overhead_ms - increment)
    share = min(usable / moves + INCREMENT_SHARE * increment, usable * MAX_CLOCK_SHARE)
    return max(MIN_THINK_MS, min(MAX_THINK_MS, share - overhead_ms))


class MeasuredOverhead:
    """What a move costs beyond thinking (the bot's `overhead_ms`), read off the server's
    clock: the clock before our move, plus the increment, less the clock at our next turn,
    less the move's own thinking — stream and request latency and our own work, which a wall
    clock on our side would miss. The median of the last `window` moves, so one slow move (the
    first model call, a retried request) does not set aside a whole clock."""

    def __init__(self, window: int = 5) -> None:
        self.window = window
        self.costs_ms: list[float] = []
        self.pending: tuple[float, float] | None = None  # (clock before, thinking) of our move

    def add(self, move_ms: float, thinking_ms: float) -> None:
        self.costs_ms = [*self.costs_ms, max(0.0, move_ms - thinking_ms)][-self.window :]

    def moved(self, clock_ms: float | None, thinking_ms: float) -> None:
        """Our move is sent: the clock it started from (None: no clock) and its thinking."""
        self.pending = None if clock_ms is None else (clock_ms, thinking_ms)

    def turn(self, clock_ms: float | None, increment_ms: float | None) -> None:
        """Our turn again: the clock now says what the last move cost."""
        if clock_ms is not None and self.pending is not None:
            before, thinking_ms = self.pending
            self.add(before + (increment_ms or 0) - clock_ms, thinking_ms)
        self.pending = None

    @property
    def ms(self) -> float:
        """0 before the first move is measured."""
        if not self.costs_ms:
            return 0.0
        ordered = sorted(self.costs_ms)
        return ordered[len(ordered) // 2]


# --------------------------------------------------------------------------- the look-ahead

#: a search that cannot afford this many network evaluations is no better than the one-pass
#: move: below it the engine plays searchless (a short clock never makes it slower)
MIN_SEARCH_NODES = 8
#: the share of the move's budget a search normally spends, and the most it spends in a
#: critical position: the rest is slack for a network call slower than the last one
TARGET_SHARE, LIMIT_SHARE = 0.5, 0.8
#: the root's best move stands out when its value is this far above every other move's (in
#: logits of win probability: 0.5 against 0.35, or 0.95 against 0.91): the search then stops
#: at CLEAR_SHARE of its target
CLEAR_GAP, CLEAR_SHARE = 0.6, 0.25
#: the top two moves are this close (0.5 against 0.47), or the most visited is not the best
#: valued: a critical position, where the search may run to LIMIT_SHARE of the budget
CLOSE_GAP = 0.12


@dataclass(frozen=True)
class SearchTime:
    """How long one search may run: `target` seconds in a position like most, at most `limit`,
    and what one network evaluation costs (`node_seconds`). A `fixed` time (UCI `go movetime`)
    is spent whole, as the GUI asked."""

    target: float
    limit: float
    node_seconds: float
    fixed: bool = False

    def allowed(self, gap: float) -> float:
        """Seconds this search may run, given the root's `gap`: the most visited move's value
        less the best other move's, in logits (negative when another move is valued higher)."""
        if self.fixed:
            return self.limit
        if gap >= CLEAR_GAP:
            return min(self.limit, CLEAR_SHARE * self.target)
        if gap < CLOSE_GAP:
            return self.limit
        return min(self.limit, self.target)

    def nodes_left(self, elapsed: float, gap: float) -> float:
        """About how many more evaluations fit in the time this search is allowed."""
        return max(0.0, self.allowed(gap) - elapsed) / max(self.node_seconds, 1e-6)


def search_time(
    budget_ms: float | None,
    node_seconds: float,
    target_share: float = TARGET_SHARE,
    fixed: bool = False,
) -> SearchTime | None:
    """The search's time for a move whose think budget is `budget_ms` (think_budget_ms, or
    movetime less the overhead), or None when the budget cannot buy MIN_SEARCH_NODES
    evaluations (then play searchless). No budget (None: no clock) gives no time bound:
    an infinite SearchTime, bounded by nodes or `stop` alone."""
    if budget_ms is None:
        return SearchTime(math.inf, math.inf, node_seconds)
    budget = budget_ms / 1000.0
    if budget < MIN_SEARCH_NODES * node_seconds:
        return None
    if fixed:
        return SearchTime(budget, budget, node_seconds, fixed)
    target = max(min(target_share, LIMIT_SHARE) * budget, MIN_SEARCH_NODES * node_seconds)
    return SearchTime(target, max(target, LIMIT_SHARE * budget), node_seconds)

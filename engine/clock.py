"""The think-time budget: how long one move may take, for `oneply uci` and the bot alike.

One formula, so an engine in a GUI and the bot on Lichess spend their clock the same way:

    budget = min(left / moves_to_go + 3/4 · increment, left / 3) − overhead

clamped to [MIN_THINK_MS, MAX_THINK_MS]. `moves_to_go` is UCI's `movestogo` when given, else
DEFAULT_MOVES_TO_GO. A third of the clock at most keeps a reserve even when the increment is
large compared with what is left; three quarters of the increment leaves a quarter of it for
lag. The overhead is UCI's `Move Overhead` (GUI and pipe latency); the bot passes none,
Lichess compensates network lag itself. oneply's forward pass takes milliseconds: the budget
bounds what can take longer, the Stockfish fallbacks (engine/policy.py, engine/fallback.py),
and MAX_THINK_MS keeps a long clock from being spent on them.
"""

from __future__ import annotations

#: moves assumed left in the game when the clock does not say (UCI `movestogo`)
DEFAULT_MOVES_TO_GO = 30
#: share of the increment that may be spent on this move
INCREMENT_SHARE = 0.75
#: never more than this share of the time left
MAX_CLOCK_SHARE = 1 / 3
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
    left = max(0.0, float(left_ms))
    moves = moves_to_go if moves_to_go and moves_to_go > 0 else DEFAULT_MOVES_TO_GO
    share = min(
        left / moves + INCREMENT_SHARE * max(0.0, float(increment_ms or 0)), left * MAX_CLOCK_SHARE
    )
    return max(MIN_THINK_MS, min(MAX_THINK_MS, share - overhead_ms))

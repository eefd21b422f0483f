"""engine/play/clock.py: the one think-time formula, its per-move overhead and its reserve."""

from __future__ import annotations

import pytest

from oneply.engine.play.clock import (
    DEFAULT_MOVES_TO_GO,
    MIN_THINK_MS,
    SUDDEN_DEATH_RESERVE_MOVES,
    MeasuredOverhead,
    think_budget_ms,
)


def moves_before_flag(cost_ms: float, overhead_ms: float, share: float = 0.5) -> int:
    """A 1+0 game that spends `share` of each budget thinking and `cost_ms` more on every
    move (the bot with the look-ahead on): how many moves until the clock runs out."""
    left = 60_000.0
    for move in range(1, 10_000):
        budget = think_budget_ms(left, 0, None, overhead_ms)
        assert budget is not None
        left -= share * budget + cost_ms
        if left <= 0:
            return move
    return 10_000


def test_sudden_death_sets_aside_the_overhead_of_moves_to_come():
    # told its 55 ms cost, the budget lasts ~120 moves longer than when it is not told
    told, blind = moves_before_flag(55, 55), moves_before_flag(55, 0)
    assert blind < 200 and told > 280, (blind, told)
    # once the clock is down to the reserve, nothing is left to think with
    assert think_budget_ms(SUDDEN_DEATH_RESERVE_MOVES * 55, 0, None, 55) == MIN_THINK_MS


def test_an_increment_that_pays_the_overhead_reserves_nothing():
    left, inc = 60_000, 100
    expected = min(left / DEFAULT_MOVES_TO_GO + 0.75 * inc, left / 3) - 50
    assert think_budget_ms(left, inc, None, 50) == pytest.approx(expected)
    reserved = (left - SUDDEN_DEATH_RESERVE_MOVES * 100) / DEFAULT_MOVES_TO_GO + 0.75 * inc
    assert think_budget_ms(left, inc, None, 200) == pytest.approx(reserved - 200)


def test_movestogo_refills_the_clock_so_only_each_moves_own_overhead_is_paid():
    assert think_budget_ms(60_000, 0, 10, 100) == 5_900
    assert think_budget_ms(600, 0, 3, 100) == 100  # a third of the clock, less the overhead


def test_measured_overhead_is_the_median_of_recent_moves():
    overhead = MeasuredOverhead(window=5)
    assert overhead.ms == 0
    overhead.add(900, 0)  # the first model call: slow, and not what later moves cost
    for _ in range(3):
        overhead.add(70, 20)
    assert overhead.ms == 50
    overhead.add(20, 40)  # a clock that says the search took longer: never negative
    assert overhead.ms == 50 and min(overhead.costs_ms) == 0
    for _ in range(5):
        overhead.add(130, 10)
    assert overhead.ms == 120 and len(overhead.costs_ms) == 5

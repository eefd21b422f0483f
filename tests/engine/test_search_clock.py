"""The look-ahead's time manager (engine/play/clock.py SearchTime) on slowed scorers: it spends
little when one move stands out, more when the top two are close, never past its budget, and
hands a clock too short to buy a search back to the one-pass move."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import chess
import pytest

from oneply.engine.play.clock import (
    CLEAR_SHARE,
    MIN_SEARCH_NODES,
    SearchTime,
    search_time,
)
from oneply.engine.play.inference import MoveScore, Scorer
from oneply.engine.play.search import Limits, TreeSearch

NODE_SECONDS = 0.004


class SlowScorer:
    """Every legal move valued by `value(board, move)`, each position costing NODE_SECONDS: the
    search's arithmetic on a clock whose cost per node is known."""

    def __init__(self, value: Callable[[chess.Board, chess.Move], float]) -> None:
        self.value = value

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.score_many([board])[0]

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        time.sleep(NODE_SECONDS * len(boards))
        return [
            sorted((MoveScore(m, self.value(b, m)) for m in b.legal_moves), key=lambda s: -s.win)
            for b in boards
        ]


def one_stands_out(board: chess.Board, move: chess.Move) -> float:
    return 0.95 if move == next(iter(board.legal_moves)) else 0.2


def all_equal(board: chess.Board, move: chess.Move) -> float:
    return 0.5


def timed_search(scorer: SlowScorer, budget_s: float) -> tuple[float, SearchTime]:
    tree = TreeSearch(scorer, batch=4)
    clock = search_time(1000 * budget_s, tree.node_seconds())
    assert clock is not None
    started = time.perf_counter()
    tree.search(chess.Board(), Limits(seconds=clock.limit, clock=clock))
    return time.perf_counter() - started, clock


def test_a_clear_best_move_spends_a_fraction_of_a_close_call():
    clear, clock = timed_search(SlowScorer(one_stands_out), budget_s=0.6)
    close, _ = timed_search(SlowScorer(all_equal), budget_s=0.6)
    assert clear <= CLEAR_SHARE * clock.target + 4 * 4 * NODE_SECONDS + 0.05
    assert close >= clock.target  # a critical position: past the target, towards the limit
    assert close <= clock.limit + 0.05  # never past the budget (one batch's slack)
    assert clear < close / 2


def test_a_clock_that_cannot_pay_for_a_search_plays_searchless():
    assert search_time(MIN_SEARCH_NODES * 1000 * NODE_SECONDS * 0.9, NODE_SECONDS) is None
    assert search_time(MIN_SEARCH_NODES * 1000 * NODE_SECONDS * 1.1, NODE_SECONDS) is not None
    unbounded = search_time(None, NODE_SECONDS)
    assert unbounded is not None and unbounded.limit == float("inf")


def test_movetime_is_spent_whole_even_with_a_clear_best_move():
    tree = TreeSearch(SlowScorer(one_stands_out), batch=4)
    clock = search_time(300, tree.node_seconds(), fixed=True)
    assert clock is not None
    started = time.perf_counter()
    tree.search(chess.Board(), Limits(seconds=clock.limit, clock=clock))
    assert 0.3 - 5 * 4 * NODE_SECONDS <= time.perf_counter() - started <= 0.35


def test_the_node_cost_is_measured_and_kept_up_to_date():
    tree = TreeSearch(SlowScorer(all_equal), batch=4)
    assert NODE_SECONDS <= tree.node_seconds() < 3 * NODE_SECONDS
    tree.search(chess.Board(), Limits(nodes=40))
    assert NODE_SECONDS <= tree.node_seconds() < 3 * NODE_SECONDS


@pytest.mark.slow
def test_uci_with_search_on_a_short_clock_answers_within_it():
    """`go wtime 300` with Search on: too short for a search at this machine's node cost, or
    just enough; either way the move comes well inside the clock."""
    from tests.helpers.uci import RawEngine

    engine = RawEngine()
    try:
        engine.send("uci\nsetoption name Search value true\nisready")
        engine.read_until("readyok", timeout=60)
        for wtime in (60, 400, 3000):
            engine.send("position startpos moves e2e4 e7e5")
            started = time.perf_counter()
            engine.send(f"go wtime {wtime} btime {wtime} winc 0 binc 0")
            lines = engine.read_until("bestmove")
            assert time.perf_counter() - started < max(0.25, wtime / 1000 / 3) + 0.3
            assert lines[-1].split()[1] != "0000"
    finally:
        engine.close()


def test_the_bundled_model_finds_a_mate_in_one_quickly():
    """A mating move is exact at the root: it stands out, and the search stops early."""
    tree = TreeSearch(Scorer(threads=1), batch=8)
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    clock = search_time(2000, tree.node_seconds())
    assert clock is not None
    info = tree.search(board, Limits(seconds=clock.limit, clock=clock))
    assert info.pv[0] == chess.Move.from_uci("a1a8")
    assert info.seconds < CLEAR_SHARE * clock.target + 0.2

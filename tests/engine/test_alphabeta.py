"""Alpha-beta over the network (engine/play/alphabeta.py), the instrument PUCT was measured
against: real onnxruntime with the bundled model."""

from __future__ import annotations

import chess
import pytest

from oneply.arena.puzzles import solve_puzzles
from oneply.engine.play.alphabeta import AlphaBeta, AlphaBetaScorer
from oneply.engine.play.inference import Scorer
from tests.engine.test_search import mates_missed_by_v12


@pytest.fixture(scope="module")
def bundled() -> Scorer:
    return Scorer(threads=1)


def test_the_mates_in_two_v12_missed_in_one_pass_are_found(bundled) -> None:
    """Width 40: every move of these positions, so the network's order prunes nothing. 300
    nodes search one ply full width (41 calls; 2000 reached two plies, ~1190 calls, at ten
    times the cost) and the mates are found: each reply is valued by the network's best answer
    to it, where the one pass saw only the move's own value; the second move mates in one."""
    puzzles = mates_missed_by_v12()
    assert all(solve_puzzles(AlphaBetaScorer(bundled, 300, width=40), puzzles, 1, False))


@pytest.mark.parametrize("nodes", [1, 7, 30])
def test_the_node_budget_bounds_the_network_calls(bundled, nodes) -> None:
    search = AlphaBeta(bundled, nodes, width=6)
    ranked = search.rank(chess.Board())
    assert 1 <= len(search.scored) <= nodes
    assert sorted(s.move.uci() for s in ranked) == sorted(
        m.uci() for m in chess.Board().legal_moves
    )
    # 1 node: the network's view; 7 (1 + 6): one ply searched; 30: still one (two need 43)
    assert search.depth == {1: 0, 7: 1, 30: 1}[nodes]


def test_with_no_budget_to_search_it_ranks_as_the_network(bundled) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    assert [s.move for s in AlphaBeta(bundled, 1).rank(board)] == [
        s.move for s in bundled.score(board)
    ]


def test_a_mate_in_one_is_valued_exactly(bundled) -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8#
    best = AlphaBeta(bundled, 50).rank(board)[0]
    assert best.move == chess.Move.from_uci("a1a8") and best.win == 1.0

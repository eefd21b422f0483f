"""The data engine's UCI pipe to Stockfish: the same values as python-chess's own client, and
clear errors when Stockfish is missing or dies."""

from __future__ import annotations

import random

import chess
import chess.engine
import pytest

from oneply.engine.stockfish import SMALL, StockfishError, StockfishStartError, open_stockfish
from oneply.training.stockfish_scorer import StockfishScorer, parse_line
from tests.helpers.stockfish_reference import reference_values


def _positions(count: int, seed: int = 3) -> list[chess.Board]:
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randint(2, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over():
            boards.append(board)
    return boards


@pytest.mark.parametrize("limit", [chess.engine.Limit(depth=3), chess.engine.Limit(nodes=2000)])
def test_values_equal_python_chess_analysis(stockfish: str, limit: chess.engine.Limit) -> None:
    boards = _positions(40)
    with (
        StockfishScorer(stockfish) as scorer,
        open_stockfish(stockfish, SMALL) as ref,
    ):
        for board in boards:
            values = scorer.score_moves(board, limit)
            assert values.keys() == set(board.legal_moves)
            assert values == reference_values(ref, board, limit), board.fen()


def test_values_do_not_depend_on_what_was_searched_before(stockfish: str) -> None:
    boards = _positions(12, seed=5)
    limit = chess.engine.Limit(depth=4)
    with StockfishScorer(stockfish) as one, StockfishScorer(stockfish) as other:
        forward = [one.score_moves(b, limit) for b in boards]
        backward = [other.score_moves(b, limit) for b in reversed(boards)]
    assert forward == backward[::-1]


def test_a_dead_stockfish_is_an_error_not_a_hang(stockfish: str) -> None:
    scorer = StockfishScorer(stockfish)
    scorer.process.kill()
    scorer.process.wait()
    with pytest.raises(StockfishError):
        scorer.score_moves(chess.Board(), chess.engine.Limit(depth=2))
    scorer.quit()


def test_a_missing_stockfish_is_named(tmp_path) -> None:
    with pytest.raises(StockfishStartError, match="Stockfish did not start: .*no-stockfish"):
        StockfishScorer(str(tmp_path / "no-stockfish"))


def test_parse_line_reads_score_and_first_move_only() -> None:
    line = "info depth 3 seldepth 4 multipv 2 score cp -35 nodes 900 nps 1 pv g8f6 b1c3 e7e5"
    assert parse_line(line) == (2, chess.engine.Cp(-35), "g8f6")
    assert parse_line("info depth 5 multipv 1 score mate -2 pv h7h6 d1h5") == (
        1,
        chess.engine.Mate(-2),
        "h7h6",
    )
    assert parse_line("info depth 3 currmove e2e4 currmovenumber 1") is None
    assert parse_line("info string NNUE evaluation using nn-ad9b42354671.nnue enabled") is None

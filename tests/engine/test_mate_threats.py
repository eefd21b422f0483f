"""The ``next_check`` move fact (group ``mate_threats``, engine/facts/checks.py): once a move is
made, what could the mover do to the opponent's king were the opponent to pass — check, or mate?"""

from __future__ import annotations

import chess

from oneply.engine.facts.checks import CHECK, MATE, NO_CHECK
from oneply.engine.facts.features import MOVE_NAMES
from tests.engine.test_checks import HAND_PICKED, SPECIAL_CHECKS
from tests.helpers.boards import random_positions
from tests.helpers.fact_versions import V14_FACTS
from tests.helpers.move_facts import (
    assert_brute_force_agrees,
    assert_spared,
    values_by_san,
)

NEXT = MOVE_NAMES.index("next_check")
#: white to move after 1.e4 e5 2.Bc4 Nc6: Qh5 and Qf3 threaten Qxf7#
SCHOLAR_WHITE = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/8/PPPP1PPP/RNBQK1NR w KQkq - 2 3"


def brute_next(board: chess.Board, move: chess.Move) -> int:
    """The move, a passed turn, then every legal move of the mover played out."""
    board.push(move)
    try:
        if board.is_check():
            return NO_CHECK
        board.push(chess.Move.null())
        try:
            best = NO_CHECK
            for follow_up in list(board.legal_moves):
                board.push(follow_up)
                value = MATE if board.is_checkmate() else CHECK if board.is_check() else NO_CHECK
                board.pop()
                best = max(best, value)
            return best
        finally:
            board.pop()
    finally:
        board.pop()


def threats_of(board: chess.Board) -> dict[str, int]:
    return values_by_san(board, NEXT)


def test_next_check_matches_the_brute_force() -> None:
    fens = (*HAND_PICKED.values(), *SPECIAL_CHECKS.values(), SCHOLAR_WHITE)
    boards = random_positions(50, seed=1129) + [chess.Board(fen) for fen in fens]
    assert_brute_force_agrees(boards, NEXT, brute_next)


def test_next_check_is_what_a_player_calls_a_mating_threat() -> None:
    scholar = threats_of(chess.Board(SCHOLAR_WHITE))
    assert scholar["Qh5"] == scholar["Qf3"] == MATE  # Qxf7#
    assert scholar["Qe2"] == scholar["Nf3"] == CHECK  # Bxf7+ is there, no mate
    assert scholar["Bxf7+"] == NO_CHECK  # a check is answered, not a threat
    back_rank = threats_of(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"))
    assert back_rank["Kh2"] == back_rank["Re1"] == MATE  # Ra8# / Re8# still to come
    assert back_rank["Ra8#"] == NO_CHECK  # done, not threatened
    assert back_rank["Rf1"] == NO_CHECK  # the f7 pawn closes the file
    bare = threats_of(chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 1"))
    assert set(bare.values()) == {NO_CHECK}  # a bare king threatens nothing


def test_a_model_without_the_mate_threats_is_spared_them() -> None:
    board = chess.Board(SCHOLAR_WHITE)  # Qh5 and Qf3 threaten Qxf7#
    assert_spared(board, "next_check", (*V14_FACTS, "next_check"), V14_FACTS)
    assert MATE in threats_of(board).values()

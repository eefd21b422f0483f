"""The ``mobility`` facts (engine/facts/exchange.py safe_moves, engine/facts/features.py
``safe_moves``): trapped pieces a player sees at once, held to hand-picked positions, to the static
exchange of each destination on random positions for both colours, and spared a model that does not
read them."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from oneply.engine.facts.exchange import move_exchange, safe_moves
from oneply.engine.facts.features import SQUARE_NAMES, group_facts, square_facts
from tests.helpers.boards import random_positions
from tests.helpers.fact_versions import V14_FACTS

SAFE = SQUARE_NAMES.index("safe_moves")
MOBILITY = group_facts(["mobility"])


def by_each_destination(board: chess.Board, square: chess.Square) -> int:
    """The count the slow way: every destination's move made by the piece's own side (the
    board turned to it), its static exchange read from move_exchange."""
    piece = board.piece_at(square)
    assert piece is not None
    mover = board.copy(stack=False)
    mover.turn = piece.color
    targets = board.attacks_mask(square) & ~board.occupied_co[piece.color]
    return sum(move_exchange(mover, chess.Move(square, to)) >= 0 for to in chess.SquareSet(targets))


@pytest.mark.parametrize("board", random_positions(40, seed=7), ids=lambda b: b.fen())
def test_every_piece_counts_what_each_destination_exchange_says(board: chess.Board) -> None:
    facts = square_facts(board, MOBILITY)
    pieces = board.knights | board.bishops | board.rooks | board.queens
    for square in chess.SQUARES:
        if pieces & chess.BB_SQUARES[square]:
            expected = min(3, by_each_destination(board, square))
            assert safe_moves(board, square) == expected, chess.square_name(square)
            assert facts[square, SAFE] == 1 + expected, chess.square_name(square)
        else:
            assert facts[square, SAFE] == 0, chess.square_name(square)


#: (FEN, square, safe squares up to 3): both colours, whoever is to move
HAND_PICKED = [
    # Bxa7 b6: b8 is the rook's, b6 is held by c7; to move or not, the bishop is lost
    ("r3k3/B1p5/1p6/8/8/8/8/4K3 b - - 0 1", chess.A7, 0),
    ("r3k3/B1p5/1p6/8/8/8/8/4K3 w - - 0 1", chess.A7, 0),
    # the same bishop once c7 is gone: it takes the pawn on b6 safely
    ("r3k3/B7/1p6/8/8/8/8/4K3 w - - 0 1", chess.A7, 1),
    # a black knight in the corner: b6 and c7 are covered by white pawns
    ("n3k3/8/3P4/P7/8/8/8/4K3 w - - 0 1", chess.A8, 0),
    # a white rook walled in by its own king and pawn
    ("4k3/8/8/8/8/8/6PP/6KR w - - 0 1", chess.H1, 0),
    # a queen in the open has more than enough
    ("4k3/8/8/3Q4/8/8/8/4K3 b - - 0 1", chess.D5, 3),
    # a knight in the corner: b3 is a pawn's, c2 a rook that a pawn defends (still worth it)
    ("4k3/8/8/8/p7/3p4/2r5/N3K3 w - - 0 1", chess.A1, 1),
]


@pytest.mark.parametrize(("fen", "square", "safe"), HAND_PICKED)
def test_hand_picked_trapped_and_free_pieces(fen: str, square: chess.Square, safe: int) -> None:
    board = chess.Board(fen)
    assert safe_moves(board, square) == safe
    assert square_facts(board, MOBILITY)[square, SAFE] == 1 + safe


def test_pawns_kings_and_empty_squares_are_not_counted() -> None:
    board = chess.Board()
    facts = square_facts(board, MOBILITY)[:, SAFE]
    assert facts[chess.E2] == facts[chess.E1] == facts[chess.E4] == 0
    # the knights have two free squares each; bishops, rooks and queens are walled in
    assert facts[chess.B1] == facts[chess.G8] == 3
    assert facts[chess.C1] == facts[chess.A8] == facts[chess.D1] == 1
    with pytest.raises(ValueError, match="no piece on e4"):
        safe_moves(board, chess.E4)


def test_a_model_without_the_mobility_facts_is_spared_them() -> None:
    """v14's facts leave the channel 0 and every other channel as it was."""
    board = random_positions(1, seed=3)[0]
    full = square_facts(board)
    adopted = square_facts(board, V14_FACTS)
    assert full[:, SAFE].any() and not adopted[:, SAFE].any()
    others = [i for i, name in enumerate(SQUARE_NAMES) if name in V14_FACTS]
    assert np.array_equal(full[:, others], adopted[:, others])

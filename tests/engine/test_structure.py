"""The ``kings`` and ``passers`` facts (engine/facts/structure.py, engine/facts/features.py
``king_flights`` and ``passed``): held to hand-picked positions for both colours and whoever is to
move, to python-chess's own king moves and a slow pawn-by-pawn rule on random positions, and spared
a model that does not read them."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from oneply.engine.facts.features import SQUARE_NAMES, group_facts, square_facts
from oneply.engine.facts.structure import is_passed, king_flights, outruns_king, passer
from tests.helpers.boards import random_positions
from tests.helpers.fact_versions import V14_FACTS

FLIGHTS = SQUARE_NAMES.index("king_flights")
PASSED = SQUARE_NAMES.index("passed")
STRUCTURE = group_facts(["kings", "passers"])


def flights_the_slow_way(board: chess.Board, color: chess.Color) -> int:
    """Every square next to the king: put the king there (taking what stands on it) and ask
    python-chess whether the other side attacks it."""
    king = board.king(color)
    assert king is not None
    count = 0
    for to in chess.SquareSet(chess.BB_KING_ATTACKS[king]):
        if board.color_at(to) == color:
            continue
        moved = board.copy(stack=False)
        moved.remove_piece_at(king)
        moved.set_piece_at(to, chess.Piece(chess.KING, color))
        count += not moved.is_attacked_by(not color, to)
    return count


def passed_the_slow_way(board: chess.Board, square: chess.Square) -> bool:
    """No enemy pawn ahead of the pawn on its file or a neighbouring one, pawn by pawn."""
    color = board.color_at(square)
    assert color is not None
    ahead = 1 if color == chess.WHITE else -1
    rank, file = chess.square_rank(square), chess.square_file(square)
    for enemy in board.pieces(chess.PAWN, not color):
        in_front = (chess.square_rank(enemy) - rank) * ahead > 0
        if in_front and abs(chess.square_file(enemy) - file) <= 1:
            return False
    return True


@pytest.mark.parametrize("board", random_positions(40, seed=11), ids=lambda b: b.fen())
def test_random_positions_match_the_slow_way(board: chess.Board) -> None:
    facts = square_facts(board, STRUCTURE)
    for color in chess.COLORS:
        king = board.king(color)
        assert king is not None
        room = flights_the_slow_way(board, color)
        assert king_flights(board, color, enough=8) == room
        assert facts[king, FLIGHTS] == 1 + min(3, room)
    # the side to move: its king's room is python-chess's own legal king steps (no castling)
    steps = {m.to_square for m in board.legal_moves if m.from_square == board.king(board.turn)}
    steps -= {m.to_square for m in board.generate_castling_moves()}
    assert king_flights(board, board.turn, enough=8) == len(steps)
    for square in chess.SQUARES:
        if board.pawns & chess.BB_SQUARES[square]:
            assert is_passed(board, square) == passed_the_slow_way(board, square)
            assert (facts[square, PASSED] > 0) == is_passed(board, square)
        else:
            assert facts[square, PASSED] == 0, chess.square_name(square)
    assert np.flatnonzero(facts[:, FLIGHTS]).tolist() == sorted(chess.SquareSet(board.kings))


#: (FEN, colour, room up to 8)
KINGS = [
    # the start: neither king can step anywhere
    (chess.STARTING_FEN, chess.WHITE, 0),
    (chess.STARTING_FEN, chess.BLACK, 0),
    # back rank: the rook's ray runs through g1 to h1 once the king has left it
    ("6k1/8/8/8/8/8/5PPP/r5K1 w - - 0 1", chess.WHITE, 0),
    # the same king with the rook gone: f1 and h1
    ("6k1/8/8/8/8/8/5PPP/6K1 w - - 0 1", chess.WHITE, 2),
    # a lone king in the centre
    ("4k3/8/8/8/3K4/8/8/8 b - - 0 1", chess.WHITE, 8),
    # stalemated in the corner by a queen, not in check: no room, whoever moves
    ("k7/8/1Q6/8/8/8/8/4K3 b - - 0 1", chess.BLACK, 0),
    ("k7/8/1Q6/8/8/8/8/4K3 w - - 0 1", chess.BLACK, 0),
    # an undefended queen next to the king is a square to step to; a defended one is not
    ("k7/1Q6/8/8/8/8/8/4K3 b - - 0 1", chess.BLACK, 1),
    ("k7/1Q6/2K5/8/8/8/8/8 b - - 0 1", chess.BLACK, 0),
]


@pytest.mark.parametrize(("fen", "color", "room"), KINGS)
def test_hand_picked_kings(fen: str, color: chess.Color, room: int) -> None:
    board = chess.Board(fen)
    assert king_flights(board, color, enough=8) == room
    assert king_flights(board, color) == min(3, room)
    king = board.king(color)
    assert king is not None
    assert square_facts(board, STRUCTURE)[king, FLIGHTS] == 1 + min(3, room)


#: (FEN, pawn square, passed fact): both colours, whoever is to move
PASSERS = [
    # the rule of the square: a5 against a king on e8 queens with the move, not without
    ("4k3/8/8/P7/8/8/8/7K w - - 0 1", chess.A5, 3),
    ("4k3/8/8/P7/8/8/8/7K b - - 0 1", chess.A5, 2),
    # the double step: from a2 a king on f8 is in time, one on g8 is not
    ("5k2/8/8/8/8/8/P7/7K w - - 0 1", chess.A2, 2),
    ("6k1/8/8/8/8/8/P7/7K w - - 0 1", chess.A2, 3),
    # a black pawn on h4 against a king on d1
    ("k7/8/8/8/7p/8/8/3K4 b - - 0 1", chess.H4, 3),
    ("k7/8/8/8/7p/8/8/3K4 w - - 0 1", chess.H4, 2),
    # a knight on its path: passed, not free
    ("4k3/8/8/4n3/4P3/8/8/4K3 w - - 0 1", chess.E4, 1),
    # an enemy pawn on a neighbouring file ahead stops it; one behind does not
    ("4k3/8/3p4/8/4P3/8/8/4K3 w - - 0 1", chess.E4, 0),
    ("2k5/8/8/8/4P3/3p4/8/4K3 w - - 0 1", chess.E4, 2),
    # the black pawn on d3 of that position is passed too, its king on e8 far away
    ("4k3/8/8/8/4P3/3p4/8/7K b - - 0 1", chess.D3, 3),
]


@pytest.mark.parametrize(("fen", "square", "fact"), PASSERS)
def test_hand_picked_passers(fen: str, square: chess.Square, fact: int) -> None:
    board = chess.Board(fen)
    assert passer(board, square) == fact
    if fact >= 2:
        assert outruns_king(board, square) == (fact == 3)
    assert square_facts(board, STRUCTURE)[square, PASSED] == fact


def test_the_facts_ask_for_a_pawn() -> None:
    board = chess.Board()
    for fact in (passer, is_passed, outruns_king):
        with pytest.raises(ValueError, match="no pawn on e4"):
            fact(board, chess.E4)
    with pytest.raises(ValueError, match="no pawn on e1"):
        passer(board, chess.E1)


def test_a_model_without_the_structure_facts_is_spared_them() -> None:
    """v14's facts leave both channels 0 and every other channel as it was."""
    board = random_positions(1, seed=3)[0]
    full = square_facts(board)
    adopted = square_facts(board, V14_FACTS)
    assert full[:, FLIGHTS].any() and not adopted[:, FLIGHTS].any()
    assert not adopted[:, PASSED].any()
    others = [i for i, name in enumerate(SQUARE_NAMES) if name in V14_FACTS]
    assert np.array_equal(full[:, others], adopted[:, others])

"""Fuzzing the compiled core against the Python facts on legal positions hypothesis builds:
any material, either side to move, castling rights and en-passant squares where they can be,
and the same positions seen from the other side (``Board.mirror``)."""

from __future__ import annotations

import os

import chess
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oneply.engine.facts import native
from tests.engine.test_native import assert_same

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no compiled core: {native.REASON}")

PIECES = [chess.Piece(t, c) for t in chess.PIECE_TYPES if t != chess.KING for c in chess.COLORS]


@st.composite
def legal_positions(draw: st.DrawFn) -> chess.Board:
    board = chess.Board(None)
    squares = draw(st.lists(st.sampled_from(chess.SQUARES), min_size=2, max_size=26, unique=True))
    board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
    board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
    for square in squares[2:]:
        piece = draw(st.sampled_from(PIECES))
        if piece.piece_type == chess.PAWN and chess.square_rank(square) in (0, 7):
            continue
        board.set_piece_at(square, piece)
    board.turn = draw(st.booleans())
    board.set_castling_fen(draw(st.sampled_from(["-", "KQkq", "K", "q", "Kk", "Qq"])))
    board.castling_rights = board.clean_castling_rights()
    if draw(st.booleans()):  # an en-passant square where a double step could have just landed
        rank = 5 if board.turn == chess.WHITE else 2
        board.ep_square = chess.square(draw(st.integers(0, 7)), rank)
    assume(board.is_valid())
    return board


@settings(
    max_examples=int(os.environ.get("ONEPLY_FUZZ_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
@given(legal_positions())
def test_fuzzed_legal_positions_are_bit_identical(board):
    assert_same([board, board.mirror()])

"""Each named channel of engine/facts/features.py holds what its own fact function computes: the
writer and the declaration (SQUARE_FACTS, MOVE_FACTS) cannot drift apart, and the compiled
core names its channels in the same order."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from oneply.engine.facts.checks import enemy_checks, next_check, reply_check
from oneply.engine.facts.exchange import en_prise, move_exchange, safe_moves, threat
from oneply.engine.facts.features import (
    MOVE_FACTS,
    MOVE_NAMES,
    SQ,
    SQUARE_FACTS,
    SQUARE_NAMES,
    exchange_bucket,
    move_facts,
    square_facts,
    threat_bucket,
)
from oneply.engine.facts.structure import king_flights, passer
from tests.helpers.boards import random_positions

BOARDS = [
    chess.Board(),
    chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3"),
    chess.Board("4k3/1P6/8/3p4/2n1P3/8/5PPP/R3K2R w KQ - 0 1"),
    *random_positions(6, seed=84),
]


def expected_squares(board: chess.Board) -> dict[str, np.ndarray]:
    """Every square fact by name, each from its own function over the 64 squares."""
    us = board.turn
    named = {name: np.zeros(64, dtype=np.int64) for name in SQUARE_NAMES}
    for square in chess.SQUARES:
        named["own_attackers"][square] = min(3, len(board.attackers(us, square)))
        named["enemy_attackers"][square] = min(3, len(board.attackers(not us, square)))
        piece = board.piece_at(square)
        if piece is None:
            continue
        flag = 1 if piece.color == us else 2
        named["pinned"][square] = flag if board.is_pinned(piece.color, square) else 0
        attacked = board.attackers_mask(not piece.color, square)
        named["en_prise"][square] = flag if attacked and en_prise(board, square) else 0
        if piece.piece_type in (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
            named["safe_moves"][square] = 1 + safe_moves(board, square)
        if piece.piece_type == chess.KING:
            named["king_flights"][square] = 1 + king_flights(board, piece.color)
        if piece.piece_type == chess.PAWN:
            named["passed"][square] = passer(board, square)
    named["enemy_check"] = np.asarray(enemy_checks(board), dtype=np.int64)
    return named


def expected_move(board: chess.Board, move: chess.Move) -> dict[str, int]:
    """The move facts that one function answers alone, by name."""
    us, to = board.turn, move.to_square
    captured = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(to) or 0
    swap = exchange_bucket(move_exchange(board, move))
    board.push(move)
    try:
        return {
            "captured": captured,
            "check": int(board.is_check()),
            "dest_attackers": min(3, len(board.attackers(not us, to))),
            "dest_defenders": min(3, len(board.attackers(us, to))),
            "exchange": swap,
            "threat": threat_bucket(threat(board, us, to)),
            "reply_check": reply_check(board),
            "next_check": next_check(board),
        }
    finally:
        board.pop()


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.fen())
def test_each_square_channel_holds_its_own_fact(board: chess.Board) -> None:
    out = square_facts(board)
    for name, values in expected_squares(board).items():
        assert out[:, SQ[name]].tolist() == values.tolist(), name


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.fen())
def test_each_move_channel_holds_its_own_fact(board: chess.Board) -> None:
    moves = list(board.legal_moves)
    out = move_facts(board, moves)
    column = {name: i for i, name in enumerate(MOVE_NAMES)}
    for row, move in enumerate(moves):
        for name, value in expected_move(board, move).items():
            assert out[row, column[name]] == value, (name, move.uci())
        threatens, targets = out[row, column["threatens"]], out[row, column["targets"]]
        assert targets <= 2 and (threatens > 0 or targets == 0), move.uci()


def test_every_declared_channel_is_checked_and_within_its_size() -> None:
    board = BOARDS[1]
    assert set(expected_squares(board)) == set(SQUARE_NAMES)
    move = next(iter(board.legal_moves))
    assert set(expected_move(board, move)) | {"threatens", "targets"} == set(MOVE_NAMES)
    for facts, declared in ((square_facts(b), SQUARE_FACTS) for b in BOARDS):
        assert (facts < np.array([f.size for f in declared])).all()
    for b in BOARDS:
        out = move_facts(b, list(b.legal_moves))
        assert (out < np.array([f.size for f in MOVE_FACTS])).all()


def test_the_compiled_core_names_the_declared_channels_in_order() -> None:
    core = pytest.importorskip("oneply.engine._core")
    assert tuple(core.SQUARE_FACTS) == SQUARE_NAMES
    assert tuple(core.MOVE_FACTS) == MOVE_NAMES

"""Static exchange evaluation (engine/exchange.py) against a brute force over python-chess's
legal captures, on hand-picked positions: x-rays, en passant, promotion, a king that may not
recapture, and both colours; then the two facts built on it (engine/features.py)."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from oneply.engine.exchange import PIECE_VALUE, en_prise, move_exchange
from oneply.engine.features import (
    MOVE_NAMES,
    SQUARE_NAMES,
    V5_FACTS,
    encode_facts,
    exchange_bucket,
    move_facts,
    square_facts,
)

#: no pins and no promotion in the middle of an exchange: there the swap rule and the brute
#: force agree by definition, so any difference is a bug
POSITIONS = {
    "rook takes a loose pawn": "1k1r4/1pp4p/p7/4p3/8/P5P1/1PP4P/2K1R3 w - - 0 1",
    "knight for a pawn": "1k1r3q/1ppn3p/p4b2/4p3/8/P2N2P1/1PP1R1BP/2K1Q3 w - - 0 1",
    "doubled rooks x-ray": "4k3/4r3/8/4p3/8/8/4R3/4R1K1 w - - 0 1",
    "en passant into a bishop": "4k3/4b3/8/3pP3/8/8/8/4K3 w - d6 0 1",
    "promotion": "3r3k/2P5/8/8/8/8/8/K7 w - - 0 1",
    "king may not recapture": "8/8/8/8/8/5k2/4p3/3QK3 w - - 0 1",
    "italian, queen out": "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
    "black to move": "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R b KQkq - 0 5",
}


def _taken(board: chess.Board, move: chess.Move) -> int:
    """Material a move wins outright: what it captures and what its promotion adds."""
    captured = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(move.to_square)
    gain = PIECE_VALUE[captured] if captured else 0
    return gain + (PIECE_VALUE[move.promotion] - 1 if move.promotion else 0)


def brute_exchange(board: chess.Board, square: chess.Square) -> int:
    """What the side to move nets at best by capturing on `square` and what follows, each side
    free to stop: every legal capturer, in every order."""
    best = 0
    for move in list(board.legal_moves):
        if move.to_square == square and board.is_capture(move):
            gain = _taken(board, move)
            board.push(move)
            gain -= brute_exchange(board, square)
            board.pop()
            best = max(best, gain)
    return best


def brute_move(board: chess.Board, move: chess.Move) -> int:
    gain = _taken(board, move)
    board.push(move)
    try:
        return gain - brute_exchange(board, move.to_square)
    finally:
        board.pop()


@pytest.mark.parametrize("fen", POSITIONS.values(), ids=POSITIONS.keys())
def test_every_move_nets_what_the_brute_force_says(fen: str) -> None:
    board = chess.Board(fen)
    for move in board.legal_moves:
        if board.is_castling(move):
            assert move_exchange(board, move) == 0
            continue
        assert move_exchange(board, move) == brute_move(board, move), move.uci()
    assert board.fen() == fen  # computed on the side, never on the board


def test_hand_computed_exchanges() -> None:
    def see(key: str, uci: str) -> int:
        return move_exchange(chess.Board(POSITIONS[key]), chess.Move.from_uci(uci))

    assert see("rook takes a loose pawn", "e1e5") == 1
    assert see("knight for a pawn", "d3e5") == -2  # N×P, N×N, R×N, B×R, Q×B, Q×Q: 1 − 3
    assert see("doubled rooks x-ray", "e2e5") == 1  # the rook behind recaptures through e2
    assert see("en passant into a bishop", "e5d6") == 0  # the pawn taken on d5, lost on d6
    assert see("promotion", "c7d8q") == 13  # a rook and a queen for a pawn
    assert see("promotion", "c7c8q") == -1  # a queen made, then taken: the pawn is lost
    assert see("king may not recapture", "d1e2") == 1  # e2 is guarded by the white king


def test_pieces_en_prise_for_whoever_moves() -> None:
    """Italian, queen out: the queen on h5 (knight f6) and the pawn on e4 (knight f6, no
    defender) hang for White; f7 (queen and bishop against the king) hangs for Black."""
    board = chess.Board(POSITIONS["italian, queen out"])
    hanging = {chess.square_name(s) for s in chess.SQUARES if en_prise(board, s)}
    assert hanging == {"h5", "e4", "f7"}
    for square in chess.SQUARES:
        piece = board.piece_at(square)
        if piece is None or piece.piece_type == chess.KING:
            continue
        flipped = board.copy(stack=False)
        flipped.turn = not piece.color  # the capturer to move
        flipped.ep_square = None
        assert en_prise(board, square) == (brute_exchange(flipped, square) > 0), square


def test_the_facts_state_them_from_the_side_to_move() -> None:
    board = chess.Board(POSITIONS["italian, queen out"])
    channel = SQUARE_NAMES.index("en_prise")
    facts = square_facts(board)[:, channel]
    assert facts[chess.H5] == facts[chess.E4] == 1 and facts[chess.F7] == 2
    assert int(facts.sum()) == 4
    moves = list(board.legal_moves)
    exchange = move_facts(board, moves)[:, MOVE_NAMES.index("exchange")]
    expected = [exchange_bucket(move_exchange(board, move)) for move in moves]
    assert exchange.tolist() == expected
    assert exchange[moves.index(chess.Move.from_uci("h5f7"))] == 4  # +1: wins a pawn
    assert exchange[moves.index(chess.Move.from_uci("h5g4"))] == 0  # the queen for nothing


def test_buckets_cover_every_balance_in_order() -> None:
    buckets = [exchange_bucket(pawns) for pawns in range(-12, 13)]
    assert buckets == sorted(buckets) and set(buckets) == set(range(7))
    assert (exchange_bucket(-1), exchange_bucket(0), exchange_bucket(1)) == (2, 3, 4)


def test_a_model_without_the_exchange_facts_is_spared_them() -> None:
    """Asked only for the adopted facts, the exchange channels stay 0 and every other channel
    is what the full computation gives: files that read them play unchanged."""
    board = chess.Board(POSITIONS["italian, queen out"])
    moves = [list(board.legal_moves)]
    full = encode_facts([board], moves, len(moves[0]))
    adopted = encode_facts([board], moves, len(moves[0]), V5_FACTS)
    for names, all_of, some_of in zip((SQUARE_NAMES, MOVE_NAMES), full, adopted, strict=True):
        for index, name in enumerate(names):
            if name in V5_FACTS:
                assert np.array_equal(all_of[..., index], some_of[..., index]), name
            else:
                assert not some_of[..., index].any() and all_of[..., index].any(), name

"""Static exchange evaluation (engine/facts/exchange.py) against a brute force over python-chess's
legal captures, on hand-picked positions: x-rays, en passant, promotion, a king that may not
recapture, and both colours; then the facts built on it (engine/facts/features.py): the exchange of
each move, the pieces en prise, and what each move leaves en prise elsewhere."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from oneply.engine.facts.exchange import PIECE_VALUE, en_prise, exposed, move_exchange, threat
from oneply.engine.facts.features import (
    GROUPS,
    MOVE_NAMES,
    SQUARE_NAMES,
    encode_facts,
    exchange_bucket,
    move_facts,
    square_facts,
    threat_bucket,
)
from tests.helpers.boards import random_positions
from tests.helpers.fact_versions import V5_FACTS, V12_FACTS

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
    """Asked only for the v5 facts, the exchange, threat and check channels stay 0 and every other
    channel is what the full computation gives: files that read them play unchanged."""
    board = chess.Board(POSITIONS["italian, queen out"])
    moves = [list(board.legal_moves)]
    full = encode_facts([board], moves, len(moves[0]))
    adopted = encode_facts([board], moves, len(moves[0]), V5_FACTS)
    for names, all_of, some_of in zip((SQUARE_NAMES, MOVE_NAMES), full, adopted, strict=True):
        for index, name in enumerate(names):
            if name in V5_FACTS:
                assert np.array_equal(all_of[..., index], some_of[..., index]), name
            else:
                assert not some_of[..., index].any(), name
                if name in GROUPS["exchange"] + GROUPS["threats"]:
                    assert all_of[..., index].any(), name


def _comparable(board: chess.Board) -> bool:
    """Where the swap rule and the brute force must agree: the side to move is not in check,
    has no pinned piece and promotes with no capture (the swap rule ignores all three)."""
    mover = board.turn
    pieces = chess.SquareSet(board.occupied_co[mover])
    return not (
        board.is_check()
        or any(board.is_pinned(mover, square) for square in pieces)
        or any(m.promotion for m in board.legal_moves if board.is_capture(m))
    )


#: a knight on e5 held only by the pawn on d4; a queen on e1 screened from the rook by a bishop
LEFT_EN_PRISE = {
    "defender walks away": "4r1k1/8/8/4N3/3P4/8/8/6K1 w - - 0 1",
    "line opened": "4r1k1/8/8/8/4B3/8/8/4Q1K1 w - - 0 1",
    "middlegame, knight loose": "4q1rk/pr3ppp/8/2B1p3/4Pnb1/2PP1N2/PP3PPP/R2QR1K1 w - - 1 17",
    "middlegame, two en prise": "r1bqkb1r/pp3ppp/1nn1p3/8/Q1BP4/2N2N2/PP3PPP/R1B2RK1 w kq - 1 10",
}


@pytest.mark.parametrize("fen", LEFT_EN_PRISE.values(), ids=LEFT_EN_PRISE.keys())
def test_what_a_move_leaves_en_prise_is_what_the_brute_force_says(fen: str) -> None:
    """Every piece checked after every move, against the fact, which checks only the pieces
    attacked before the move and those on the lines it opens."""
    board = chess.Board(fen)
    us, seen, moves = board.turn, set(), list(board.legal_moves)
    facts = move_facts(board, moves)[:, MOVE_NAMES.index("threat")]
    for move, fact in zip(moves, facts, strict=True):
        board.push(move)
        if _comparable(board):
            mine = board.occupied_co[us] & ~board.kings & ~chess.BB_SQUARES[move.to_square]
            brute = max((brute_exchange(board, s) for s in chess.SquareSet(mine)), default=0)
            assert threat(board, us, move.to_square) == brute, move.uci()
            assert fact == threat_bucket(brute), move.uci()
            seen.add(brute)
        board.pop()
    assert len(seen) >= 2 and board.fen() == fen  # some moves leave material, some do not


def test_hand_picked_moves_that_leave_a_piece_en_prise() -> None:
    def left(key: str, uci: str, colour: str = "w") -> int:
        fen = LEFT_EN_PRISE[key]
        board = chess.Board(fen) if colour == "w" else chess.Board(fen).mirror()
        move = chess.Move.from_uci(uci)
        fact = move_facts(board, [move])[0, MOVE_NAMES.index("threat")]
        board.push(move)
        assert fact == threat_bucket(threat(board, not board.turn, move.to_square))
        return int(fact)

    assert left("defender walks away", "d4d5") == threat_bucket(3) == 3  # R×N, nothing back
    assert left("defender walks away", "g1g2") == 0  # R×N, P×R: Black had better not
    assert left("defender walks away", "e5c6") == 0  # the knight itself moved (exchange's job)
    assert left("line opened", "e4d3") == threat_bucket(9) == 5  # the queen, for nothing
    assert left("line opened", "e1e2") == 0  # the queen still guards the bishop
    # the same through Black's eyes: the board mirrored, Black to move
    assert left("defender walks away", "d5d4", "b") == 3
    assert left("line opened", "e5d6", "b") == 5


def test_threat_buckets_cover_every_gain_in_order() -> None:
    buckets = [threat_bucket(pawns) for pawns in range(0, 13)]
    assert buckets == sorted(buckets) and set(buckets) == set(range(6))
    assert [threat_bucket(p) for p in (0, 1, 2, 3, 5, 6, 7, 9)] == [0, 1, 2, 3, 4, 4, 5, 5]


#: double attacks and discovered attacks, White to move
ATTACKS = {
    "knight fork": "3q3r/8/8/4N3/8/8/8/K6k w - - 0 1",  # Nf7 hits the queen and the rook
    "discovered attack": "q3k3/8/8/8/8/N7/8/R3K3 w - - 0 1",  # the knight uncovers a1–a8
    "middlegame": "r1bqkb1r/pp3ppp/1nn1p3/8/Q1BP4/2N2N2/PP3PPP/R1B2RK1 w kq - 1 10",
    "italian, queen out": POSITIONS["italian, queen out"],
}


def _newly_attacked(board: chess.Board, move: chess.Move) -> list[chess.Square]:
    """The opponent's pieces (not the king) that `move` aims at, by definition: those its piece
    attacks where it lands, and those attacked after it that were not attacked before."""
    us = board.turn
    theirs = board.occupied_co[not us] & ~board.kings
    before = {s for s in chess.SquareSet(theirs) if board.is_attacked_by(us, s)}
    board.push(move)
    after = {s for s in chess.SquareSet(board.occupied_co[not us] & ~board.kings)}
    aimed = {s for s in after if board.is_attacked_by(us, s) and s not in before}
    aimed |= after & set(board.attacks(move.to_square))
    board.pop()
    return sorted(aimed)


@pytest.mark.parametrize("fen", ATTACKS.values(), ids=ATTACKS.keys())
def test_what_a_move_threatens_is_what_the_brute_force_says(fen: str) -> None:
    """Each move's ``threatens`` and ``targets`` against the brute force: the opponent passes,
    the mover captures on each piece the move aims at (every legal capture, every order)."""
    board = chess.Board(fen)
    moves = list(board.legal_moves)
    facts = move_facts(board, moves)
    threatens, targets = (facts[:, MOVE_NAMES.index(n)] for n in GROUPS["forks"])
    compared = 0
    for row, move in enumerate(moves):
        aimed = _newly_attacked(board, move)
        board.push(move)
        board.push(chess.Move.null())  # the opponent passes
        if _comparable(board) and not board.was_into_check():
            gains = [brute_exchange(board, square) for square in aimed]
            assert threatens[row] == threat_bucket(max(gains, default=0)), move.uci()
            assert targets[row] == min(2, sum(g > 0 for g in gains)), move.uci()
            compared += 1
        board.pop()
        board.pop()
    assert compared >= len(moves) // 2 and board.fen() == fen


def test_hand_picked_double_and_discovered_attacks() -> None:
    def aimed(key: str, uci: str, colour: str = "w") -> tuple[int, int]:
        board = chess.Board(ATTACKS[key])
        board = board if colour == "w" else board.mirror()
        row = move_facts(board, [chess.Move.from_uci(uci)])[0]
        return int(row[MOVE_NAMES.index("threatens")]), int(row[MOVE_NAMES.index("targets")])

    # N×Q, R×N: +6; N×R, Q×N: +2 — two pieces to win, the larger +6
    assert aimed("knight fork", "e5f7") == (threat_bucket(6), 2) == (4, 2)
    assert aimed("knight fork", "e5d7") == (0, 0)  # from d7 it hits neither
    assert aimed("discovered attack", "a3c4") == (threat_bucket(9), 1) == (5, 1)
    assert aimed("discovered attack", "e1e2") == (0, 0)  # the knight still blocks the file
    # the same through Black's eyes: the board mirrored, Black to move
    assert aimed("knight fork", "e4f2", "b") == (4, 2)
    assert aimed("discovered attack", "a6c5", "b") == (5, 1)


def test_the_forks_are_computed_only_for_a_model_that_reads_them() -> None:
    board = chess.Board(ATTACKS["knight fork"])
    moves = list(board.legal_moves)
    channels = [MOVE_NAMES.index(n) for n in GROUPS["forks"]]
    assert move_facts(board, moves)[:, channels].any()
    assert not move_facts(board, moves, V12_FACTS)[:, channels].any()


def test_the_exchanges_reused_after_a_move_are_the_fresh_ones() -> None:
    """move_facts reuses the exchanges standing before each move on the squares the move
    cannot reach (``Standing``) and looks for new targets only on the lines it opens to the
    opponent's sliders: over random middlegames, the fact equals ``threat`` computed afresh
    on the board after the move, every piece considered."""
    compared = changed = 0
    for board in random_positions(60, seed=18, plies=41):
        moves = list(board.legal_moves)
        us = board.turn
        before = max(exposed(board, us), default=0)
        facts = move_facts(board, moves)[:, MOVE_NAMES.index("threat")]
        for move, fact in zip(moves, facts, strict=True):
            board.push(move)
            fresh = threat(board, us, move.to_square)
            assert fact == threat_bucket(fresh), (board.fen(), move.uci())
            compared += 1
            changed += fresh != before
            board.pop()
    assert compared > 1000 and changed > 100  # moves that change what is en prise, and many

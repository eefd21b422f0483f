"""The compiled core (engine/csrc, engine/facts/native.py) against its Python specification.

Perft of its move generator against the standard perft positions (the published counts, which
python-chess reproduces; the first two plies are also counted here with python-chess), then
legal move ids, state tokens and every fact bit for bit against engine/facts/features.py on the
bench set and on random play-outs. ``ONEPLY_PARITY_POSITIONS`` raises the play-out count for a
long run (the closing note's 100,000).
"""

from __future__ import annotations

import os
import random

import chess
import chess.engine
import numpy as np
import pytest

from oneply.engine.facts import native
from oneply.engine.facts.encoding import encode_batch, python_batch, token_facts
from oneply.engine.play.bench import load_positions

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no compiled core: {native.REASON}")

#: (FEN, the leaf counts at depth 1, 2, …): chessprogramming.org's perft results
PERFT = [
    (chess.STARTING_FEN, (20, 400, 8902, 197281, 4865609)),
    (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        (48, 2039, 97862, 4085603),
    ),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", (14, 191, 2812, 43238, 674624)),
    (
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        (6, 264, 9467, 422333),
    ),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", (44, 1486, 62379, 2103487)),
    (
        "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
        (46, 2079, 89890, 3894594),
    ),
    # en passant that would expose the king, castling through check, promotions with check
    ("8/8/8/K2pP2q/8/8/8/7k w - d6 0 2", None),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", (26, 568, 13744, 314346)),
    ("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1", (24, 496, 9483, 182838)),
]


def python_perft(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += python_perft(board, depth - 1)
        board.pop()
    return total


@pytest.mark.parametrize("fen, counts", PERFT)
def test_perft_matches_the_published_counts_and_python_chess(fen, counts):
    board = chess.Board(fen)
    for depth in (1, 2):
        assert native.perft(board, depth) == python_perft(board, depth)
    for depth, expected in enumerate(counts or (), start=1):
        assert native.perft(board, depth) == expected, (fen, depth)


def assert_same(boards: list[chess.Board], facts: bool | tuple[str, ...] = True) -> None:
    """The compiled batch equals the Python batch, array for array and move for move."""
    ours, spec = encode_batch(boards, facts), python_batch(boards, facts)
    assert ours.moves == spec.moves
    for name in ("states", "ids", "square_facts", "move_facts"):
        got, want = getattr(ours, name), getattr(spec, name)
        if want is None:
            assert got is None, name
            continue
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if not np.array_equal(got, want):
            row = int(np.argwhere(got != want)[0][0])
            pytest.fail(f"{name} differs on {boards[row].fen()}")


def test_the_bench_set_is_bit_identical():
    assert_same(load_positions())


def test_the_bench_set_is_bit_identical_for_every_fact_subset():
    boards = load_positions()[:40]
    for facts in (False, ("own_attackers", "pinned"), ("threat",), ("reply_check", "passed")):
        assert_same(boards, facts)


def playouts(count: int, seed: int, tactical: bool) -> list[chess.Board]:
    """Positions along random games; `tactical` games prefer captures, checks and promotions
    (so exchanges, mates and the rare rules come up far more often than in uniform play)."""
    rng = random.Random(seed)
    found: list[chess.Board] = []
    while len(found) < count:
        board = chess.Board()
        for _ in range(rng.randrange(20, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            if tactical:
                sharp = [
                    m for m in moves if board.is_capture(m) or m.promotion or board.gives_check(m)
                ]
                moves = sharp if sharp and rng.random() < 0.7 else moves
            board.push(rng.choice(moves))
            if rng.random() < 0.15:
                found.append(board.copy())
    return found[:count]


PARITY_POSITIONS = int(os.environ.get("ONEPLY_PARITY_POSITIONS", "600"))


@pytest.mark.parametrize("tactical", [False, True])
def test_random_playouts_are_bit_identical(tactical):
    boards = playouts(PARITY_POSITIONS, seed=11 + tactical, tactical=tactical)
    for start in range(0, len(boards), 500):
        assert_same(boards[start : start + 500])


def test_the_mirror_view_and_both_sides_to_move_are_bit_identical():
    boards = playouts(150, seed=5, tactical=True)
    assert_same([b.mirror() for b in boards])
    assert_same([b.copy(stack=False) for b in boards])  # castling rights cleaned at the root


def test_facts_from_stored_tokens_match_the_boards_they_were_made_from():
    boards = playouts(200, seed=9, tactical=True)
    spec = python_batch(boards, True)
    squares, per_move = token_facts(spec.states, spec.ids.shape[1], True)
    np.testing.assert_array_equal(squares, spec.square_facts)
    np.testing.assert_array_equal(per_move, spec.move_facts)


def test_positions_the_core_does_not_carry_are_computed_in_python():
    """No black king, or a pawn on the back rank: python-chess still answers; so must we."""
    odd = [
        chess.Board("8/8/8/8/8/8/8/K6R w - - 0 1"),
        chess.Board("4k3/8/8/8/8/8/8/P3K3 w - - 0 1"),
    ]
    normal = load_positions()[:3]
    rows = native.encode_rows(native.rows_of_boards(odd + normal), True)
    assert rows.ok.tolist() == [False, False, True, True, True]
    assert_same(odd + normal)


def test_the_218_move_position_and_counters_past_999():
    board = chess.Board("3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1")
    board.halfmove_clock, board.fullmove_number = 1234, 5678
    assert_same([board])
    assert len(encode_batch([board]).moves[0]) == 218


def stockfish_playouts(count: int, seed: int) -> list[chess.Board]:
    """Positions along games Stockfish plays against itself at depth 1, the first moves random
    (so the games differ): the positions a training run actually labels."""
    from oneply.engine.stockfish import close_stockfish, open_stockfish

    rng = random.Random(seed)
    engine = open_stockfish(None)
    found: list[chess.Board] = []
    try:
        while len(found) < count:
            board = chess.Board()
            for ply in range(rng.randrange(40, 200)):
                if board.is_game_over():
                    break
                if ply < 6:
                    move = rng.choice(list(board.legal_moves))
                else:
                    move = engine.play(board, chess.engine.Limit(depth=1)).move
                board.push(move)
                found.append(board.copy())
    finally:
        close_stockfish(engine)
    return [b for b in found if not b.is_game_over()][:count]


@pytest.mark.slow
def test_stockfish_playouts_are_bit_identical():
    boards = stockfish_playouts(PARITY_POSITIONS, seed=3)
    for start in range(0, len(boards), 500):
        assert_same(boards[start : start + 500])

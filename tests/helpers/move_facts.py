"""Checks every move fact of engine/facts/checks.py owes: it turns over with the board, and a model
that does not read it is spared it (one helper, for the `replies` and `mate_threats` tests)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess
import numpy as np

from oneply.engine.facts.checks import CHECK, MATE, NO_CHECK
from oneply.engine.facts.features import MOVE_NAMES, encode_facts, move_facts
from oneply.engine.model.mirror import mirror_square


def values_by_san(board: chess.Board, channel: int) -> dict[str, int]:
    """Each legal move's value of the move fact at `channel`, by the move's SAN."""
    moves = list(board.legal_moves)
    values = move_facts(board, moves)[:, channel]
    return {board.san(move): int(value) for move, value in zip(moves, values, strict=True)}


def assert_brute_force_agrees(
    boards: Sequence[chess.Board], channel: int, brute: Callable[[chess.Board, chess.Move], int]
) -> None:
    """The check fact at `channel` is `brute`'s answer for every move of every board, leaves
    the board as it was, and takes each of its values (no check, check, mate) somewhere."""
    found = np.zeros(3, dtype=int)
    for board in boards:
        before, moves = board.fen(), list(board.legal_moves)
        values = move_facts(board, moves)[:, channel]
        assert values.tolist() == [brute(board, move) for move in moves], before
        assert board.fen() == before and not board.move_stack
        found += np.bincount(values, minlength=3)
    assert found[NO_CHECK] > 100 and found[CHECK] > 100 and found[MATE] > 0


def assert_turns_over_with_the_board(board: chess.Board, channel: int) -> None:
    """The colour-flipped position gives each flipped move the same value."""
    moves = list(board.legal_moves)
    flipped = [
        chess.Move(mirror_square(m.from_square), mirror_square(m.to_square), m.promotion)
        for m in moves
    ]
    ours = move_facts(board, moves)[:, channel]
    assert np.array_equal(ours, move_facts(board.mirror(), flipped)[:, channel])


def assert_spared(
    board: chess.Board, name: str, reading: Sequence[str], not_reading: Sequence[str]
) -> None:
    """Fact sets `reading` and `not_reading` differ by `name` alone: the second leaves its
    channel 0 (it is never computed) and every other channel as the first has it."""
    moves = [list(board.legal_moves)]
    _, full = encode_facts([board], moves, len(moves[0]), reading)
    _, spared = encode_facts([board], moves, len(moves[0]), not_reading)
    channel = MOVE_NAMES.index(name)
    assert full[..., channel].any() and not spared[..., channel].any()
    others = [i for i, other in enumerate(MOVE_NAMES) if other != name]
    assert np.array_equal(full[..., others], spared[..., others])

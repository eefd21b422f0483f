"""Checks every move fact of engine/facts/checks.py owes: it turns over with the board, and a model
that does not read it is spared it (one helper, for the `replies` and `mate_threats` tests)."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np

from oneply.engine.facts.features import MOVE_NAMES, encode_facts, move_facts
from oneply.engine.model.mirror import mirror_square


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

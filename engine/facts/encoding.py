"""Positions → what the model reads: state tokens, legal move ids and the facts, for a batch.

Every caller that scores positions — the engine, the search's leaves, the bot's batcher, the
strength lab, training's collate and ``train eval`` — comes through here, so one switch picks
the path: the compiled core (engine/facts/native.py) when it is importable, else the Python modules
(engine/facts/tokenizer.py, engine/facts/features.py), which are the specification and give the same
arrays bit for bit. Positions the core does not answer for (engine/facts/native.py) are computed in
Python row by row, so a batch never fails for taking the fast path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess
import numpy as np

from oneply.engine.facts import native
from oneply.engine.facts.features import MOVE_FACTS, Wanted, encode_squares, move_facts
from oneply.engine.facts.moves import MOVE_INDEX, MOVES
from oneply.engine.facts.tokenizer import board_from, fen_of_tokens, tokenize

PAD_MOVE = -1
#: per move id, its python-chess move (shared: moves are never changed in place)
_MOVE_OF_ID: tuple[chess.Move, ...] = tuple(chess.Move.from_uci(uci) for uci in MOVES)


@dataclass(frozen=True)
class EncodedBatch:
    """What the model reads for a batch of positions, and each position's legal moves."""

    states: np.ndarray  # int64 [B, 77] state tokens
    ids: np.ndarray  # int64 [B, N] legal move ids, PAD_MOVE-padded
    moves: list[list[chess.Move]]  # each position's legal moves, in the order of `ids`
    #: engine/facts/features.py facts, for models that read them: int64 [B, 64, S] and [B, N, M]
    square_facts: np.ndarray | None = None
    move_facts: np.ndarray | None = None

    def arrays(self) -> list[np.ndarray]:
        """The model inputs in the order of the torch model's forward (facts when present)."""
        facts = [a for a in (self.square_facts, self.move_facts) if a is not None]
        return [self.states, self.ids, *facts]


def encode_batch(
    boards: Sequence[chess.Board], facts: Wanted = False, move_facts: bool = True
) -> EncodedBatch:
    """State tokens [B, 77], padded move ids [B, N], each board's legal moves, and with
    `facts` the engine/facts/features.py facts (True all, or the names the model reads; without
    `move_facts` only the square facts, all a state-only sv or bc model reads)."""
    if native.available() and boards and all(native.supported(b) for b in boards):
        return _native_batch(boards, facts, move_facts)
    native.warn_once()
    return python_batch(boards, facts, move_facts)


def encode_states(boards: Sequence[chess.Board], facts: Wanted = False) -> EncodedBatch:
    """What an sv model reads: state tokens [B, 77] and with `facts` the square facts; no moves
    (ids is [B, 0])."""
    encoded = encode_batch(boards, facts, move_facts=False)
    ids = np.zeros((len(boards), 0), dtype=np.int64)
    return EncodedBatch(encoded.states, ids, [[] for _ in boards], encoded.square_facts)


def python_batch(
    boards: Sequence[chess.Board], facts: Wanted = False, move_facts: bool = True
) -> EncodedBatch:
    """encode_batch on the Python path (the specification the compiled core is held to)."""
    moves = [list(board_from(board).legal_moves) for board in boards]
    width = max(1, max((len(m) for m in moves), default=0))
    ids = np.full((len(boards), width), PAD_MOVE, dtype=np.int64)
    for row, legal in enumerate(moves):
        ids[row, : len(legal)] = [MOVE_INDEX[m.uci()] for m in legal]
    states = np.stack([tokenize(board) for board in boards]).reshape(len(boards), -1)
    if not facts:
        return EncodedBatch(states, ids, moves)
    squares = encode_squares(boards, facts).reshape(len(boards), 64, -1)
    if not move_facts:
        return EncodedBatch(states, ids, moves, squares)
    return EncodedBatch(states, ids, moves, squares, python_move_facts(boards, moves, width, facts))


def python_move_facts(
    boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]], width: int, facts: Wanted
) -> np.ndarray:
    """The move-facts input of a batch on the Python path: int64 [B, width, M] (padding 0)."""
    per_move = np.zeros((len(boards), width, len(MOVE_FACTS)), dtype=np.int64)
    for row, (board, legal) in enumerate(zip(boards, moves, strict=True)):
        per_move[row, : len(legal)] = move_facts(board, legal, facts)
    return per_move


def _native_batch(boards: Sequence[chess.Board], facts: Wanted, with_moves: bool) -> EncodedBatch:
    out = native.encode_rows(native.rows_of_boards(boards), facts, moves=with_moves)
    if not out.ok.all():
        return _patched(boards, out, facts, with_moves)
    moves = [[_MOVE_OF_ID[i] for i in row if i >= 0] for row in out.ids.tolist()]
    per_move = None if out.move_facts is None else out.move_facts.astype(np.int64)
    return EncodedBatch(out.states, out.ids, moves, out.square_facts, per_move)


def _patched(
    boards: Sequence[chess.Board], out: native.Encoded, facts: Wanted, with_moves: bool
) -> EncodedBatch:
    """The rows the core left to Python, computed there; the others as the core gave them."""
    python = python_batch(boards, facts, with_moves)
    width = max(python.ids.shape[1], out.ids.shape[1])
    good = np.flatnonzero(out.ok)
    ids = _widened(python.ids, width, PAD_MOVE)
    ids[good] = _widened(out.ids, width, PAD_MOVE)[good]
    states = python.states.copy()
    states[good] = out.states[good]
    squares, per_move = python.square_facts, python.move_facts
    if squares is not None and out.square_facts is not None:
        squares[good] = out.square_facts[good]
    if per_move is not None and out.move_facts is not None:
        per_move = _widened(per_move, width, 0)
        per_move[good] = _widened(out.move_facts.astype(np.int64), width, 0)[good]
    return EncodedBatch(states, ids, python.moves, squares, per_move)


def _widened(array: np.ndarray, width: int, fill: int) -> np.ndarray:
    """`array` [B, n, …] cut or padded with `fill` to [B, width, …]."""
    if array.shape[1] >= width:
        return array[:, :width].copy()
    shape = (array.shape[0], width, *array.shape[2:])
    wide = np.full(shape, fill, dtype=array.dtype)
    wide[:, : array.shape[1]] = array
    return wide


def token_move_ids(state: np.ndarray) -> np.ndarray:
    """The legal move ids of one stored row of 77 state tokens, in python-chess order (the
    order its values are stored in): int64 [n]."""
    if native.available():
        rows, readable = native.rows_of_tokens(np.asarray(state)[None])
        if readable.all():
            out = native.encode_rows(rows, False)
            if out.ok.all():
                return out.ids[0, : out.counts[0]].copy()
    native.warn_once()
    board = chess.Board(fen_of_tokens(state))
    return np.fromiter((MOVE_INDEX[m.uci()] for m in board.legal_moves), np.int64)


def token_facts(states: np.ndarray, width: int, facts: Wanted) -> tuple[np.ndarray, np.ndarray]:
    """The facts of stored training rows [B, 77] (their moves in python-chess order, the order
    values are stored in): int64 [B, 64, S] and [B, width, M], straight from the tokens."""
    states = np.asarray(states, dtype=np.int64)
    if native.available():
        rows, readable = native.rows_of_tokens(states)
        if readable.all():
            out = native.encode_rows(rows, facts)
            if out.ok.all() and out.move_facts is not None and out.square_facts is not None:
                return out.square_facts, _widened(out.move_facts.astype(np.int64), width, 0)
    native.warn_once()
    boards = [chess.Board(fen_of_tokens(state)) for state in states]
    encoded = python_batch(boards, facts)
    assert encoded.square_facts is not None and encoded.move_facts is not None
    return encoded.square_facts, _widened(encoded.move_facts, width, 0)

"""FEN → 77 state tokens, exactly as the model file format defines them (REFERENCE.md §1).

The token order is part of the model format: a model trained on one order is garbage on another.

Layout of the 77 tokens::

    side (1) | board (64, rank 8 first, digits expanded to '.') | castling (4) |
    en passant (2) | halfmove clock (3) | fullmove number (3)

Counters above 999 do not fit in three characters; they are clamped to 999 (documented
behaviour: the halfmove clock only matters up to 100 and the fullmove number barely at all).
"""

from __future__ import annotations

import chess
import numpy as np

CHARACTERS = "0123456789abcdefghpnrkqPBNRQKw."
CHAR_INDEX = {c: i for i, c in enumerate(CHARACTERS)}
VOCAB_SIZE = len(CHARACTERS)  # 31
STATE_LENGTH = 77
MAX_COUNTER = 999


class TokenizerError(ValueError):
    """A position that cannot be written as 77 state tokens (bad FEN, non-standard castling)."""


def _pad(text: str, width: int) -> str:
    return text + "." * (width - len(text))


def _counter(value: str, name: str) -> str:
    number = int(value)
    if number < 0:
        raise TokenizerError(f"negative {name} in FEN: {value}")
    return _pad(str(min(number, MAX_COUNTER)), 3)


def state_string(position: chess.Board | str) -> str:
    """The 77 characters the model reads, for a board or a FEN string.

    A FEN string is normalised through python-chess first, so an en-passant square is only
    kept when an en-passant capture is legal (the convention the training data uses).
    """
    board = board_from(position)
    fields = board.fen().split(" ")
    board_field, side, castling, ep, halfmove, fullmove = fields
    rows = "".join("." * int(c) if c.isdigit() else c for c in board_field.replace("/", ""))
    if castling != "-" and any(c not in "KQkq" for c in castling):
        raise TokenizerError(f"castling rights {castling!r} are not standard chess (KQkq)")
    text = (
        side
        + rows
        + _pad("" if castling == "-" else castling, 4)
        + _pad("" if ep == "-" else ep, 2)
        + _counter(halfmove, "halfmove clock")
        + _counter(fullmove, "fullmove number")
    )
    if len(text) != STATE_LENGTH:  # only reachable with a malformed board that still parsed
        raise TokenizerError(f"position does not encode to {STATE_LENGTH} tokens: {board.fen()}")
    return text


def board_from(position: chess.Board | str) -> chess.Board:
    """A python-chess board from a board or a FEN, with a TokenizerError for a bad FEN."""
    if isinstance(position, chess.Board):
        if position.chess960:
            raise TokenizerError("Chess960 positions are not supported by the model format")
        return position
    try:
        return chess.Board(position)
    except ValueError as error:
        raise TokenizerError(f"invalid FEN {position!r}: {error}") from None


def tokenize(position: chess.Board | str) -> np.ndarray:
    """77 int64 token ids for a board or FEN string."""
    return np.fromiter((CHAR_INDEX[c] for c in state_string(position)), np.int64, STATE_LENGTH)

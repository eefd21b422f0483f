"""FEN → 77 state tokens, exactly as the model file format defines them (docs/FORMAT.md §1).

The token order is part of the model format: a model trained on one order is garbage on another.

Layout of the 77 tokens::

    side (1) | board (64, rank 8 first, digits expanded to '.') | castling (4) |
    en passant (2) | halfmove clock (3) | fullmove number (3)

Counters above 999 do not fit in three characters; they are clamped to 999 (documented
behaviour: the halfmove clock only matters up to 100 and the fullmove number barely at all).
"""

from __future__ import annotations

import re

import chess
import numpy as np

CHARACTERS = "0123456789abcdefghpnrkqPBNRQKw."
CHAR_INDEX = {c: i for i, c in enumerate(CHARACTERS)}
VOCAB_SIZE = len(CHARACTERS)  # 31
STATE_LENGTH = 77
MAX_COUNTER = 999
#: per square (a1=0 … h8=63): the index of its board token among the 77 (side token first, then
#: the board in FEN order, rank 8 first)
SQUARE_TOKEN = np.array([1 + (7 - sq // 8) * 8 + sq % 8 for sq in range(64)], dtype=np.int64)
#: the fields of the 77 tokens, in order, with their widths (the layout above); FIELDS[name] is
#: the slice of the tokens a field occupies (engine/model/mirror.py rewrites the state field by
#: field)
_WIDTHS = {"side": 1, "board": 64, "castling": 4, "en_passant": 2, "halfmove": 3, "fullmove": 3}
_STARTS = np.cumsum([0, *_WIDTHS.values()]).tolist()
FIELDS: dict[str, slice] = {
    name: slice(start, start + width)
    for (name, width), start in zip(_WIDTHS.items(), _STARTS, strict=False)
}
assert _STARTS[-1] == STATE_LENGTH
#: castling rights in the order FEN writes them
CASTLING_LETTERS = "KQkq"


class TokenizerError(ValueError):
    """A position that cannot be written as 77 state tokens (bad FEN, non-standard castling)."""


def _pad(text: str, width: int) -> str:
    return text + "." * (width - len(text))


def castling_field(rights: str) -> str:
    """The 4 castling characters for FEN castling rights (``KQkq`` order, ``-`` for none)."""
    if rights != "-" and any(c not in CASTLING_LETTERS for c in rights):
        raise TokenizerError(f"castling rights {rights!r} are not standard chess (KQkq)")
    return _pad("" if rights == "-" else rights, FIELDS["castling"].stop - FIELDS["castling"].start)


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
    text = (
        side
        + rows
        + castling_field(castling)
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


_CHARACTER_BYTES = np.frombuffer(CHARACTERS.encode(), dtype=np.uint8)
_EMPTY_RUN = re.compile(r"\.+")


def fen_of_tokens(state: np.ndarray) -> str:
    """The FEN a row of 77 state tokens was made from (the inverse of tokenizer.state_string)."""
    text = _CHARACTER_BYTES[np.asarray(state, dtype=np.int64)].tobytes().decode()
    board = "/".join(text[1 + rank * 8 : 9 + rank * 8] for rank in range(8))
    board = _EMPTY_RUN.sub(lambda run: str(len(run.group())), board)
    castling = text[65:69].rstrip(".") or "-"
    ep = text[69:71].rstrip(".") or "-"
    halfmove, fullmove = text[71:74].rstrip("."), text[74:77].rstrip(".")
    return f"{board} {text[0]} {castling} {ep} {halfmove} {fullmove}"


# --------------------------------------------------------------------------- identity

#: the tokens that make two positions the same: side, board, castling and en passant, not the
#: move counters (the first 71 of the 77)
KEY_LENGTH = _STARTS[list(_WIDTHS).index("halfmove")]


def position_key(state_tokens: np.ndarray) -> bytes:
    """The identity of a tokenized position (its first :data:`KEY_LENGTH` tokens as bytes): the
    one key of deduplication, the train/val split and the puzzle exclusion."""
    tokens = np.asarray(state_tokens)
    if tokens.shape[-1] != STATE_LENGTH:
        raise ValueError(f"expected {STATE_LENGTH} state tokens, got shape {tokens.shape}")
    return np.ascontiguousarray(tokens[:KEY_LENGTH], dtype=np.uint8).tobytes()


def fen_key(fen: str) -> str:
    """The same identity for a FEN as python-chess writes it: its first four fields (board,
    side, castling, en passant), for the text files of `train positions`."""
    return " ".join(fen.split(" ")[:4])

"""The compiled core: legal move ids, state tokens and every fact of a batch in one C call.

Why: the facts of engine/facts/features.py cost several times what the network does when
python-chess computes them, move by move. engine/csrc/ computes the same numbers — bit for bit, held
to the Python modules by tests/engine/test_native*.py — for a whole batch while the GIL is released.
The Python modules stay the specification and the fallback: without the extension (no C
compiler at install time) every caller gets the same arrays from them, and the engine says so
once on stderr.

A position goes to C as a row of python-chess's bitboards and counters (:data:`FIELDS`); a
stored training row can be turned into that row in C too (:func:`rows_of_tokens`), so training
never builds a ``chess.Board`` per sample. Rows the core does not answer for (a side without
exactly one king, a pawn on a back rank) come back marked, and the caller computes those in
Python.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType

import chess
import numpy as np

from oneply.engine.facts.features import (
    GROUPS,
    MOVE_FACTS,
    MOVE_NAMES,
    SQUARE_FACTS,
    SQUARE_NAMES,
    Wanted,
    reads,
)
from oneply.engine.facts.moves import MOVE_FROM, MOVE_PROMOTION, MOVE_TO, MOVES
from oneply.engine.facts.tokenizer import CHARACTERS, STATE_LENGTH

#: a position row: python-chess's piece bitboards, colours, castling rights, en-passant square
#: (64: none), side to move, halfmove clock, fullmove number
FIELDS = (
    "pawns", "knights", "bishops", "rooks", "queens", "kings", "white", "black",
    "castling", "ep", "turn", "halfmove", "fullmove",
)  # fmt: skip
#: the widest move list a row can have (the most legal moves of any chess position)
MAX_LEGAL = 218
#: about how much slower the Python path is (``oneply bench`` measures it)
PYTHON_SLOWDOWN = 40


def _load() -> tuple[ModuleType | None, str]:
    """The extension, configured with the vocabulary and the alphabet; or None and why not."""
    if os.environ.get("ONEPLY_NATIVE", "1") == "0":
        return None, "ONEPLY_NATIVE=0"
    try:
        from oneply.engine import _core  # type: ignore[attr-defined]
    except ImportError as error:
        return None, f"{error}"
    if (tuple(_core.SQUARE_FACTS), tuple(_core.MOVE_FACTS)) != (SQUARE_NAMES, MOVE_NAMES):
        return (
            None,
            "its fact channels differ from engine/facts/features.py (rebuild: pip install -e .)",
        )
    if tuple(_core.GROUPS) != tuple(g for g in GROUPS if g not in _ALWAYS):
        return (
            None,
            "its fact groups differ from engine/facts/features.py (rebuild: pip install -e .)",
        )
    table = np.full((64, 64, 5), -1, dtype=np.int16)
    table[MOVE_FROM, MOVE_TO, MOVE_PROMOTION] = np.arange(len(MOVES))
    _core.configure(table.tobytes(), CHARACTERS)
    return _core, ""


#: the groups every position gets, whatever a model reads (their channels are cheap)
_ALWAYS = ("attacks", "pins", "move_facts")
_core, REASON = _load()
_warned = False
_enabled = True


def available() -> bool:
    """Whether the compiled core is in use."""
    return _core is not None and _enabled


def path_name() -> str:
    """Which path computes the facts: ``native`` or ``python`` (``oneply bench`` shows it)."""
    return "native" if available() else "python"


def describe() -> str:
    """One line for ``oneply health``: whether the compiled core is in use, and if not, why."""
    if available():
        return "native: yes (compiled facts, move ids and tokens)"
    why = REASON if _core is None else "switched off"
    return f"native: no ({why}); the Python path, about {PYTHON_SLOWDOWN}x slower"


@contextmanager
def python_path() -> Iterator[None]:
    """Within: every caller takes the Python path (``oneply bench`` times both in one run)."""
    global _enabled
    before, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = before


def warn_once() -> None:
    """Say once on stderr that the Python path runs, and why (a user of a slow engine should
    know it is slow for a reason they can fix)."""
    global _warned
    if _core is None and not _warned:  # not when python_path() asked for it
        _warned = True
        print(
            f"oneply: native facts unavailable ({REASON}); using the Python path, "
            f"about {PYTHON_SLOWDOWN}x slower",
            file=sys.stderr,
            flush=True,
        )


def group_mask(facts: Wanted) -> int:
    """The core's bit mask of the optional groups a fact set reads."""
    if _core is None:
        return 0
    return sum(1 << i for i, group in enumerate(_core.GROUPS) if reads(facts, group))


def supported(board: chess.Board) -> bool:
    """Whether a board is a standard chess position the row format can carry."""
    return (
        type(board).uci_variant == "chess"
        and not board.chess960
        and board.halfmove_clock >= 0
        and board.fullmove_number >= 0
    )


def rows_of_boards(boards: Sequence[chess.Board]) -> np.ndarray:
    """uint64 [B, len(FIELDS)] position rows of python-chess boards."""
    return np.array(
        [
            (
                b.pawns,
                b.knights,
                b.bishops,
                b.rooks,
                b.queens,
                b.kings,
                b.occupied_co[chess.WHITE],
                b.occupied_co[chess.BLACK],
                b.castling_rights,
                64 if b.ep_square is None else b.ep_square,
                int(b.turn),
                min(b.halfmove_clock, 10**6),
                min(b.fullmove_number, 10**6),
            )  # fmt: skip
            for b in boards
        ],
        dtype=np.uint64,
    ).reshape(len(boards), len(FIELDS))


def rows_of_tokens(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position rows of stored state tokens [B, 77], and per row whether C could read it."""
    if _core is None:
        raise RuntimeError(f"native facts unavailable ({REASON})")
    tokens = np.ascontiguousarray(states, dtype=np.int64).reshape(-1, STATE_LENGTH)
    rows = np.zeros((len(tokens), len(FIELDS)), dtype=np.uint64)
    status = np.zeros(len(tokens), dtype=np.uint8)
    _core.from_tokens(tokens, rows, status)
    return rows, status == 0


@dataclass(frozen=True)
class Encoded:
    """What the core computed for a batch of position rows (rows where ``ok`` is False are the
    caller's to compute: their other fields are undefined)."""

    ok: np.ndarray  # bool [B]
    states: np.ndarray  # int64 [B, 77]
    ids: np.ndarray  # int64 [B, width] legal move ids in python-chess order, -1 padded
    counts: np.ndarray  # int64 [B] legal moves per row
    square_facts: np.ndarray | None  # int64 [B, 64, S]
    move_facts: np.ndarray | None  # uint8 [B, width, M]


def encode_rows(
    rows: np.ndarray, facts: Wanted, squares: bool = True, moves: bool = True
) -> Encoded:
    """Tokens, legal move ids and (with `facts`) the square and move facts of position rows;
    channels of groups `facts` does not read are 0, as in engine/facts/features.py."""
    if _core is None:
        raise RuntimeError(f"native facts unavailable ({REASON})")
    rows = np.ascontiguousarray(rows, dtype=np.uint64)
    count = len(rows)
    want_squares, want_moves = bool(facts) and squares, bool(facts) and moves
    states = np.zeros((count, STATE_LENGTH), dtype=np.int64)
    ids = np.zeros((count, MAX_LEGAL), dtype=np.int64)
    counts = np.zeros(count, dtype=np.int64)
    square_out = np.zeros((count, 64, len(SQUARE_FACTS)) if want_squares else 0, np.int64)
    move_out = np.zeros((count, MAX_LEGAL, len(MOVE_FACTS)) if want_moves else 0, np.uint8)
    status = np.zeros(count, dtype=np.uint8)
    mask = group_mask(facts) if facts else 0
    _core.encode(
        rows, mask, int(want_squares), int(want_moves), MAX_LEGAL,
        states, ids, counts, square_out, move_out, status,
    )  # fmt: skip
    width = max(1, int(counts.max(initial=0)))
    return Encoded(
        status == 0,
        states,
        ids[:, :width],
        counts,
        square_out if want_squares else None,
        move_out[:, :width] if want_moves else None,
    )


def perft(board: chess.Board, depth: int) -> int:
    """Leaf nodes of the core's legal move tree from `board` (tests hold it to python-chess)."""
    if _core is None:
        raise RuntimeError(f"native facts unavailable ({REASON})")
    return int(_core.perft(rows_of_boards([board]).tobytes(), depth))

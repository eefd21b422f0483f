"""Tables that show the network a position from the side to move (``ModelConfig.mirror``).

Why: a position with black to move is, with colours swapped and the board turned over, a
position with white to move that has the very same answer. A network that always sees the
mover as white learns one set of patterns instead of a white and a black copy of each, so every
training position teaches both colours (issue 11: sample efficiency on a CPU budget).

The flip happens inside the model (training/model/model.py, engine/model/graph.py) from the same two
inputs, so the ONNX contract does not change: callers still pass the real position's tokens and the
real moves' ids, and get each real move's value back in the same slot.

A flip is python-chess ``Board.mirror()`` written on tokens: ranks turned over (a1 ↔ a8),
piece colours swapped, side to move swapped, castling rights swapped (and rewritten in ``KQkq``
order), the en-passant square's rank turned over; the two clocks unchanged. Every field but
castling is "take the token at some position, map its value": ``STATE_SOURCE`` and
``STATE_MAP``. Castling cannot be done token by token (``Kq`` becomes ``Qk``, not ``kQ``), so
the four castling tokens are first summed into a 4-bit code of the rights (``CASTLING_BIT``),
appended to the state as token 77, and each castling position maps that code to its token of
the flipped field. With ``extended = state + [code]``::

    flipped[i] = STATE_MAP[i, extended[STATE_SOURCE[i]]]

Every table is derived from the tokenizer's and the move vocabulary's own definitions, and
mirroring twice is the identity (tests/engine/test_mirror.py checks both against
python-chess).
"""

from __future__ import annotations

import numpy as np

from oneply.engine.facts.moves import MOVE_INDEX, MOVES
from oneply.engine.facts.tokenizer import (
    CASTLING_LETTERS,
    CHAR_INDEX,
    CHARACTERS,
    FIELDS,
    SQUARE_TOKEN,
    STATE_LENGTH,
    VOCAB_SIZE,
    castling_field,
)

#: the side-to-move token that triggers the flip
BLACK_TOKEN = CHAR_INDEX["b"]
#: position of the castling code in the extended state (one past the 77 tokens)
CODE_POSITION = STATE_LENGTH
NUM_CASTLING_CODES = 1 << len(CASTLING_LETTERS)
assert NUM_CASTLING_CODES <= VOCAB_SIZE  # codes index a STATE_MAP row like token ids


def mirror_square(square: int) -> int:
    """The square on the same file, rank turned over (a1=0 ↔ a8=56)."""
    return square ^ 56


def _mirror_uci(uci: str) -> str:
    def flip(name: str) -> str:
        return name[0] + str(9 - int(name[1]))

    return flip(uci[:2]) + flip(uci[2:4]) + uci[4:]


def _move_table() -> np.ndarray:
    missing = [m for m in MOVES if _mirror_uci(m) not in MOVE_INDEX]
    if missing:  # only a change to the vocabulary could do this
        raise AssertionError(f"move vocabulary is not rank-symmetric: no mirror for {missing[:5]}")
    return np.array([MOVE_INDEX[_mirror_uci(m)] for m in MOVES], dtype=np.int64)


def _char_map(mapping: dict[str, str]) -> np.ndarray:
    """A STATE_MAP row: token id → token id, the identity except for `mapping`."""
    return np.array([CHAR_INDEX[mapping.get(c, c)] for c in CHARACTERS], dtype=np.int64)


def _castling_tables() -> tuple[np.ndarray, np.ndarray]:
    """CASTLING_BIT (token → its bit in the rights code) and, per code, the flipped field."""
    bit = np.zeros(VOCAB_SIZE, dtype=np.int64)
    for i, letter in enumerate(CASTLING_LETTERS):
        bit[CHAR_INDEX[letter]] = 1 << i
    flipped = np.zeros((NUM_CASTLING_CODES, len(castling_field("-"))), dtype=np.int64)
    for code in range(NUM_CASTLING_CODES):
        rights = {c for i, c in enumerate(CASTLING_LETTERS) if code >> i & 1}
        swapped = "".join(c for c in CASTLING_LETTERS if c.swapcase() in rights) or "-"
        flipped[code] = [CHAR_INDEX[c] for c in castling_field(swapped)]
    return bit, flipped


def _state_tables(castling_flipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    source = np.arange(STATE_LENGTH, dtype=np.int64)
    table = np.tile(np.arange(VOCAB_SIZE, dtype=np.int64), (STATE_LENGTH, 1))
    table[FIELDS["side"]] = _char_map({"w": "b", "b": "w"})
    pieces = "pnbrqkPNBRQK"
    for square in range(64):
        source[SQUARE_TOKEN[square]] = SQUARE_TOKEN[mirror_square(square)]
        table[SQUARE_TOKEN[square]] = _char_map({c: c.swapcase() for c in pieces})
    ep_rank = FIELDS["en_passant"].start + 1  # file letter, then rank digit
    table[ep_rank] = _char_map({str(r): str(9 - r) for r in range(1, 9)})
    for j, position in enumerate(range(FIELDS["castling"].start, FIELDS["castling"].stop)):
        source[position] = CODE_POSITION
        table[position] = CHAR_INDEX["."]  # codes past 15 never occur
        table[position, :NUM_CASTLING_CODES] = castling_flipped[:, j]
    return source, table


#: per move id: the id of the same move with ranks turned over (e2e4 → e7e5, a2a1q → a7a8q)
MIRROR_MOVE = _move_table()
CASTLING_BIT, CASTLING_FLIPPED = _castling_tables()
STATE_SOURCE, STATE_MAP = _state_tables(CASTLING_FLIPPED)
#: STATE_MAP flattened, and each position's row offset into it (one Gather in the ONNX graph)
STATE_MAP_FLAT = STATE_MAP.reshape(-1)
STATE_MAP_OFFSET = np.arange(STATE_LENGTH, dtype=np.int64) * VOCAB_SIZE
#: what a model that mirrors inside itself gathers from, by the name the torch model's
#: buffers carry (training/model/model.py; engine/model/graph.py's constants are these)
IN_MODEL_TABLES: dict[str, np.ndarray] = {
    "castling_bit": CASTLING_BIT,
    "state_source": STATE_SOURCE,
    "state_map": STATE_MAP_FLAT,
    "state_map_offset": STATE_MAP_OFFSET,
    "mirror_move": MIRROR_MOVE,
}


def flip_state(state: np.ndarray) -> np.ndarray:
    """State tokens [..., 77] of the colour-flipped positions (whatever side is to move).

    The reference for the torch and ONNX versions, which apply it only where black is to move.
    """
    castling = state[..., FIELDS["castling"]]
    code = CASTLING_BIT[castling].sum(-1, keepdims=True)
    extended = np.concatenate([state, code], axis=-1)
    flipped: np.ndarray = STATE_MAP_FLAT[extended[..., STATE_SOURCE] + STATE_MAP_OFFSET]
    return flipped

"""The compact shard format (``oneply-shard-v2``): the position and one value per legal move.

A v1 shard (training/data/dataset.py) stores every legal move id (int16) beside its value (float32)
and the positions uncompressed: about 250 bytes per position. The move ids carry no
information — they follow from the position in python-chess generation order, the order the
trainer reads them in — so a v2 shard stores only what cannot be recomputed::

    DIR/shard-name/
        data.npz     zlib-compressed: states uint8 [P, 77]  the model's state tokens
                                      counts uint8 [P]      legal moves per position (a check)
                                      values uint16 [M]     win probability × 65535, rounded
        meta.json    format, count, action_values, sha256 (of data.npz), whatever the writer adds

A *best-only* shard (meta.json ``"labels": "best"``, written by ``generate --labels best``)
labels one move per position — Stockfish's best, from one search without MultiPV — which is
all the sv and bc predictors read. It has the same arrays (so the same checks, reader and
writer) plus ``best uint8 [P]``, the slot (in generation order) of the labelled move; every
other move's stored value is 0 and means *not scored*. The reader returns those as
:data:`UNSCORED` (−1.0): below every real value, so the sv target (the row's maximum) is the
best value and the bc target (the first argmax) is the best move's slot, exactly — also when
the best value is 0.0 (a lost position), where a 0 sentinel would tie. The writer marks the
unscored moves of a record the same way (value :data:`UNSCORED`). Shards without ``labels``
hold every move's value (``all``).

Reading loads the (small) arrays into memory once; a row's move ids are recomputed from its
tokens when the row is read (tokens → FEN → python-chess legal moves), which also checks the
count stored beside them. Quantising to 1/65535 is far below the resolution of the value
bins the model predicts.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import numpy as np

from oneply.engine.facts.tokenizer import STATE_LENGTH, VOCAB_SIZE, fen_of_tokens

FORMAT = "oneply-shard-v2"
DATA = "data.npz"
SCALE = 65535
#: a move whose value a best-only shard does not hold (see the module docstring)
UNSCORED = -1.0
#: meta.json ``labels`` of a best-only shard; absent means every move is scored
BEST_ONLY = "best"


def board_of_tokens(state: np.ndarray) -> chess.Board:
    return chess.Board(fen_of_tokens(state))


def quantise(wins: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(wins, dtype=np.float64) * SCALE).astype(np.uint16)


def dequantise(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32) / np.float32(SCALE)


def pack(
    states: np.ndarray, wins: Sequence[np.ndarray], best_only: bool = False
) -> dict[str, np.ndarray]:
    """Check the writer's input and build the three arrays of a v2 shard (four with
    ``best_only``: each row then holds exactly one value, the rest :data:`UNSCORED`)."""
    states = np.asarray(states)
    if states.ndim != 2 or states.shape[1] != STATE_LENGTH:
        raise ValueError(f"states must have shape [P, {STATE_LENGTH}], got {states.shape}")
    if len(states) != len(wins):
        raise ValueError(f"{len(states)} states but {len(wins)} value lists")
    if len(states) and (states.min() < 0 or states.max() >= VOCAB_SIZE):
        raise ValueError(f"state tokens must be in [0, {VOCAB_SIZE})")
    counts = np.array([len(w) for w in wins], dtype=np.int64)
    if len(counts) and (counts.min() < 1 or counts.max() > 255):
        raise ValueError("every position needs 1 to 255 legal moves (drop mates and stalemates)")
    flat = np.concatenate([np.asarray(w, np.float64) for w in wins]) if len(wins) else np.zeros(0)
    arrays: dict[str, np.ndarray] = {"states": states.astype(np.uint8)}
    if best_only and len(counts):
        scored = flat != UNSCORED
        starts = np.cumsum(counts) - counts
        if np.any(np.add.reduceat(scored.astype(np.int64), starts) != 1):
            raise ValueError("a best-only row needs exactly one scored move")
        arrays["best"] = (np.flatnonzero(scored) - starts).astype(np.uint8)
        flat = np.where(scored, flat, 0.0)
    elif best_only:
        arrays["best"] = np.zeros(0, np.uint8)
    if len(flat) and not (np.all(flat >= 0.0) and np.all(flat <= 1.0)):
        raise ValueError("win probabilities must be in [0, 1]")
    return {**arrays, "counts": counts.astype(np.uint8), "values": quantise(flat)}


def save(directory: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write data.npz into ``directory`` (fsynced; the caller publishes it atomically)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as bool
    with open(directory / DATA, "wb") as file:
        file.write(buffer.getvalue())
        file.flush()
        os.fsync(file.fileno())


def load(directory: Path) -> dict[str, np.ndarray]:
    """The arrays of data.npz, in memory; missing or corrupt data raises OSError/ValueError."""
    with np.load(directory / DATA, allow_pickle=False) as data:
        names = ("states", "counts", "values", "best")
        return {name: data[name] for name in names if name != "best" or name in data.files}


def check(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> str | None:
    """What is wrong with a loaded v2 shard, or None."""
    states, counts, values = arrays["states"], arrays["counts"], arrays["values"]
    expected = {"states": np.uint8, "counts": np.uint8, "values": np.uint16}
    for name, dtype in expected.items():
        if arrays[name].dtype != dtype:
            return f"{name}: dtype {arrays[name].dtype}, expected {np.dtype(dtype)}"
    if states.ndim != 2 or states.shape[1] != STATE_LENGTH:
        return f"states: shape {states.shape}, expected [P, {STATE_LENGTH}]"
    if len(states) != meta.get("count") or counts.shape != (len(states),):
        return f"{len(states)} states and {len(counts)} counts, meta.json says {meta.get('count')}"
    if len(counts) and counts.min() < 1:
        return "counts: every position needs at least one legal move"
    if int(counts.sum(dtype=np.int64)) != len(values) or len(values) != meta.get("action_values"):
        return f"{len(values)} values, counts sum to {int(counts.sum())}"
    if len(states) and states.max() >= VOCAB_SIZE:
        return f"states: token ids must be < {VOCAB_SIZE}"
    return _check_best(arrays, meta)


def _check_best(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> str | None:
    """What is wrong with a best-only shard's ``best`` array (or its absence), or None."""
    best_only = meta.get("labels", "all") == BEST_ONLY
    if "best" not in arrays:
        return "best: missing (meta.json says labels: best)" if best_only else None
    best, counts = arrays["best"], arrays["counts"]
    if not best_only:
        return "best: present, but meta.json does not say labels: best"
    if best.dtype != np.uint8 or best.shape != counts.shape:
        return f"best: dtype {best.dtype} shape {best.shape}, expected uint8 {counts.shape}"
    if len(best) and np.any(best >= counts):
        return "best: a slot beyond its position's legal moves"
    return None

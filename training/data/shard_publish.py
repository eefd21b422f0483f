"""Writing annotated shards atomically: a shard exists whole or not at all.

Why its own module: the trainer only reads shards (training/data/dataset.py holds their format and
the reader); the writers — generate's shard writer, PGN and file annotation, the tests — share
this one publishing step. The arrays go to a hidden temporary directory beside the shard, are
fsynced, and one rename publishes them; a killed writer leaves at worst a hidden `.tmp-PID`
entry, which :func:`remove_stale_temporaries` clears once its process is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oneply.engine.facts.moves import NUM_MOVES
from oneply.engine.facts.tokenizer import STATE_LENGTH, VOCAB_SIZE
from oneply.engine.files import temporary_path
from oneply.training.data import compact
from oneply.training.data.dataset import ARRAYS, FORMAT, array_sha256


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as file:
        np.save(file, array, allow_pickle=False)
        file.flush()
        os.fsync(file.fileno())


def _pack(
    states: np.ndarray, move_ids: Sequence[np.ndarray], wins: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """Check the writer's input and turn the per-position lists into the flat arrays."""
    states = np.asarray(states)
    if states.ndim != 2 or states.shape[1] != STATE_LENGTH:
        raise ValueError(f"states must have shape [P, {STATE_LENGTH}], got {states.shape}")
    if not len(states) == len(move_ids) == len(wins):
        raise ValueError(f"{len(states)} states but {len(move_ids)} move lists, {len(wins)} wins")
    lengths = np.array([len(m) for m in move_ids], dtype=np.int64)
    if any(len(m) != len(w) for m, w in zip(move_ids, wins, strict=True)):
        raise ValueError("each position needs exactly one win probability per move")
    if len(lengths) and lengths.min() == 0:
        raise ValueError("every position needs at least one move (drop mates and stalemates)")
    offsets = np.zeros(len(states) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    moves = np.concatenate([np.asarray(m) for m in move_ids]) if len(move_ids) else np.zeros(0)
    values = np.concatenate([np.asarray(w) for w in wins]) if len(wins) else np.zeros(0)
    if len(moves) and (moves.min() < 0 or moves.max() >= NUM_MOVES):
        raise ValueError(f"move ids must be in [0, {NUM_MOVES})")
    if len(values) and not (np.all(values >= 0.0) and np.all(values <= 1.0)):
        raise ValueError("win probabilities must be in [0, 1]")
    if len(states) and (states.min() < 0 or states.max() >= VOCAB_SIZE):
        raise ValueError(f"state tokens must be in [0, {VOCAB_SIZE})")
    return {
        "states": states.astype(np.uint8),
        "offsets": offsets,
        "moves": moves.astype(np.int16),
        "wins": values.astype(np.float32),
    }


def write_shard(
    path: Path,
    states: np.ndarray,
    move_ids: Sequence[np.ndarray],
    wins: Sequence[np.ndarray],
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write one v1 shard atomically and return its manifest entry (name, count, values, sha256).

    The arrays go to a hidden temporary directory beside ``path`` and are fsynced before one
    rename publishes them: a run killed at any moment leaves either the whole shard or no
    shard (plus, at worst, a hidden ``.tmp`` directory that the next writer removes).
    An existing shard at ``path`` is replaced.
    """
    arrays = _pack(states, move_ids, wins)

    def fill(temporary: Path) -> dict[str, Any]:
        for name in ARRAYS:
            _save(temporary / f"{name}.npy", arrays[name])
        return {"format": FORMAT, "count": len(arrays["states"]), "sha256": array_sha256(temporary)}

    return _publish(Path(path), fill, len(arrays["moves"]), meta)


def write_compact_shard(
    path: Path, states: np.ndarray, wins: Sequence[np.ndarray], meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write one v2 (compact) shard atomically: ``wins[i]`` are position i's legal moves'
    values in python-chess generation order. Returns the manifest entry, as write_shard.
    With ``meta["labels"] == "best"`` a best-only shard: one scored value per row, the others
    ``compact.UNSCORED`` (training/data/compact.py)."""
    arrays = compact.pack(states, wins, (meta or {}).get("labels") == compact.BEST_ONLY)

    def fill(temporary: Path) -> dict[str, Any]:
        compact.save(temporary, arrays)
        digest = hashlib.sha256((temporary / compact.DATA).read_bytes()).hexdigest()
        return {"format": compact.FORMAT, "count": len(arrays["states"]), "sha256": digest}

    return _publish(Path(path), fill, len(arrays["values"]), meta)


#: `_publish`'s and the manifests' hidden work folders/files: `.NAME.tmp-PID`, `.NAME.old-PID`
_TEMPORARY = re.compile(r"\..+\.(?:tmp|old)-(\d+)")


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove the hidden `.NAME.tmp-PID` / `.NAME.old-PID` entries a killed writer left in
    `directory`, and return them. Only those whose process is gone: a live PID's entries are
    another writer's work in progress (`generate --shard K/N` runs one process per shard on
    the same folder), and nothing else ever names them, so without this they stay forever."""
    removed = []
    for entry in sorted(directory.glob(".*-*")):
        match = _TEMPORARY.fullmatch(entry.name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def _process_alive(pid: int) -> bool:
    """Whether process `pid` exists (signal 0 only checks; it delivers nothing)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or not a PID: leave it
    return True


def _publish(
    path: Path,
    fill: Callable[[Path], dict[str, Any]],
    action_values: int,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    """Fill a hidden temporary directory, add meta.json, fsync and rename it to ``path``."""
    temporary = temporary_path(path)
    if temporary.exists():
        shutil.rmtree(temporary)
    temporary.mkdir(parents=True)
    written = fill(temporary)
    entry = {
        "name": path.name,
        "count": int(written["count"]),
        "action_values": int(action_values),
        "sha256": written["sha256"],
    }
    with open(temporary / "meta.json", "w") as file:
        json.dump({"format": written["format"], **(meta or {}), **entry}, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    _fsync_dir(temporary)
    if path.exists():  # a directory cannot be renamed over a non-empty one: move it aside first
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        os.replace(path, old)
        shutil.rmtree(old)
    os.replace(temporary, path)
    _fsync_dir(path.parent)
    return entry

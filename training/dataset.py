"""Annotated shards: the on-disk dataset the trainer reads, and its train/validation split.

A *shard* is a directory of plain ``.npy`` arrays, so it can be memory-mapped with
``np.load(path, mmap_mode="r")`` and inspected with nothing but numpy::

    chunk-000042/
        states.npy    uint8   [P, 77]   state tokens (engine/tokenizer.py), one row per position
        offsets.npy   int64   [P + 1]   position i owns moves/wins[offsets[i]:offsets[i + 1]]
        moves.npy     int16   [M]       legal move ids (engine/moves.py vocabulary, < 1968)
        wins.npy      float32 [M]       win probability of each move for the side that plays it
        meta.json                       format, counts, sha256 and whatever the writer adds

``offsets[0] == 0``, ``offsets[P] == M`` and offsets strictly increase (every stored position
has at least one legal move). Moves are stored in python-chess generation order, the order of
``legal_move_ids(board)``.

A shard is written to a hidden temporary directory, fsynced and renamed into place, so a shard
either exists whole or not at all; readers skip hidden directories. Its ``sha256`` covers the
four array files in the order above (meta.json holds the checksum, so it is not covered).

The train/validation split is a stable hash of the position (board, side, castling, en
passant; not the move counters), so a position lands in the same split in every shard, every
run and on every machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from engine.moves import NUM_MOVES
from engine.tokenizer import STATE_LENGTH, VOCAB_SIZE

FORMAT = "oneply-shard-v1"
ARRAYS = ("states", "offsets", "moves", "wins")
#: tokens 0..70 are side (1), board (64), castling (4) and en passant (2); the rest are counters
KEY_LENGTH = 71


class DatasetError(ValueError):
    """A shard or dataset that cannot be read: missing, truncated, corrupt or inconsistent."""


# --------------------------------------------------------------------------- split


def position_key(state_tokens: np.ndarray) -> bytes:
    """The identity of a position: its first 71 tokens (without the move counters)."""
    tokens = np.asarray(state_tokens)
    if tokens.shape[-1] != STATE_LENGTH:
        raise ValueError(f"expected {STATE_LENGTH} state tokens, got shape {tokens.shape}")
    return tokens[:KEY_LENGTH].astype(np.uint8).tobytes()


def _hash_percent(key: bytes) -> float:
    """A stable pseudo-random number in [0, 100) from a position key (blake2b, not hash())."""
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "little") % 1_000_000 / 10_000


def is_validation(state_tokens: np.ndarray, val_percent: float = 5.0) -> bool:
    """Whether a position belongs to the validation split (about val_percent % of positions)."""
    return _hash_percent(position_key(state_tokens)) < val_percent


# --------------------------------------------------------------------------- writing


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


def _sha256(directory: Path) -> str:
    digest = hashlib.sha256()
    for name in ARRAYS:
        with open(directory / f"{name}.npy", "rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


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
    meta: dict | None = None,
) -> dict:
    """Write one shard atomically and return its manifest entry (name, count, values, sha256).

    The arrays go to a hidden temporary directory beside ``path`` and are fsynced before one
    rename publishes them: a run killed at any moment leaves either the whole shard or no
    shard (plus, at worst, a hidden ``.tmp`` directory that the next writer removes).
    An existing shard at ``path`` is replaced.
    """
    path = Path(path)
    arrays = _pack(states, move_ids, wins)
    temporary = path.parent / f".{path.name}.tmp-{os.getpid()}"
    if temporary.exists():
        shutil.rmtree(temporary)
    temporary.mkdir(parents=True)
    for name in ARRAYS:
        _save(temporary / f"{name}.npy", arrays[name])
    entry = {
        "name": path.name,
        "count": int(len(arrays["states"])),
        "action_values": int(len(arrays["moves"])),
        "sha256": _sha256(temporary),
    }
    with open(temporary / "meta.json", "w") as file:
        json.dump({"format": FORMAT, **(meta or {}), **entry}, file, indent=1)
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


# --------------------------------------------------------------------------- reading


class Shard:
    """One shard, memory-mapped; opening it checks that it is whole and consistent.

    The checks are cheap relative to training (one pass over the arrays) and turn a truncated
    or corrupt file into a DatasetError naming it, instead of garbage batches or a numpy
    error from deep inside a DataLoader. ``verify=True`` also recomputes the sha256.
    """

    def __init__(self, path: Path | str, verify: bool = False) -> None:
        self.path = Path(path)
        self.meta = self._read_meta()
        self.states, self.offsets, self.moves, self.wins = (self._load(n) for n in ARRAYS)
        self._check_structure()
        self._check_values()
        if verify and self.meta.get("sha256") != _sha256(self.path):
            raise DatasetError(f"{self.path}: sha256 does not match meta.json (corrupt shard)")

    def _read_meta(self) -> dict:
        file = self.path / "meta.json"
        try:
            meta = json.loads(file.read_text())
        except FileNotFoundError:
            raise DatasetError(f"{file}: missing (not a shard, or an unfinished one)") from None
        except (OSError, ValueError) as error:
            raise DatasetError(f"{file}: unreadable shard metadata: {error}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise DatasetError(f"{file}: not a {FORMAT} shard")
        return meta

    def _load(self, name: str) -> np.ndarray:
        file = self.path / f"{name}.npy"
        try:
            return np.load(file, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise DatasetError(f"{file}: missing") from None
        except (OSError, ValueError, EOFError) as error:
            raise DatasetError(f"{file}: truncated or corrupt: {error}") from None

    def _fail(self, name: str, problem: str) -> None:
        raise DatasetError(f"{self.path / (name + '.npy')}: {problem}")

    def _check_structure(self) -> None:
        expected = {"states": np.uint8, "offsets": np.int64, "moves": np.int16, "wins": np.float32}
        for name, dtype in expected.items():
            if getattr(self, name).dtype != dtype:
                self._fail(name, f"dtype {getattr(self, name).dtype}, expected {np.dtype(dtype)}")
        count = self.meta.get("count")
        if self.states.ndim != 2 or self.states.shape[1] != STATE_LENGTH:
            self._fail("states", f"shape {self.states.shape}, expected [P, {STATE_LENGTH}]")
        if len(self.states) != count:
            self._fail("states", f"{len(self.states)} positions, meta.json says {count}")
        if self.offsets.shape != (count + 1,):
            self._fail("offsets", f"shape {self.offsets.shape}, expected ({count + 1},)")
        total = self.meta.get("action_values")
        if self.moves.shape != (total,) or self.wins.shape != (total,):
            self._fail("moves", f"moves {self.moves.shape} / wins {self.wins.shape}, not {total}")
        if self.offsets[0] != 0 or self.offsets[-1] != total:
            self._fail("offsets", f"must run from 0 to {total}")
        if count and not np.all(np.diff(self.offsets) > 0):
            self._fail("offsets", "not strictly increasing")

    def _check_values(self) -> None:
        if len(self.states) and self.states.max() >= VOCAB_SIZE:
            self._fail("states", f"token ids must be < {VOCAB_SIZE}")
        if len(self.moves) and (self.moves.min() < 0 or self.moves.max() >= NUM_MOVES):
            self._fail("moves", f"move ids must be in [0, {NUM_MOVES})")
        if len(self.wins) and not (np.all(self.wins >= 0.0) and np.all(self.wins <= 1.0)):
            self._fail("wins", "win probabilities must be in [0, 1] (NaN or out of range)")

    def __len__(self) -> int:
        return len(self.states)

    @property
    def num_action_values(self) -> int:
        return len(self.moves)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(state int64[77], move_ids int64[n], wins float32[n]) of position ``index``."""
        start, stop = self.offsets[index], self.offsets[index + 1]
        return (
            np.array(self.states[index], dtype=np.int64),
            np.array(self.moves[start:stop], dtype=np.int64),
            np.array(self.wins[start:stop], dtype=np.float32),
        )

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return (self[i] for i in range(len(self)))


def find_shards(root: Path | str) -> list[Path]:
    """Shard directories under root (recursively), sorted; hidden (unfinished) ones skipped."""
    root = Path(root)
    if not root.exists():
        raise DatasetError(f"{root}: no such file or directory")
    if (root / "meta.json").exists():
        return [root]
    found = []
    for meta in sorted(root.rglob("meta.json")):
        relative = meta.parent.relative_to(root)
        if not any(part.startswith(".") for part in relative.parts):
            found.append(meta.parent)
    return found


class AnnotatedDataset:
    """All shards under one or more roots, as (state, move_ids, wins) examples.

    ``split`` picks positions by ``is_validation``: "train", "val" or "all". The index of
    the chosen positions is built once at construction (one hash per position).
    """

    def __init__(
        self,
        root: Path | str | Sequence[Path | str],
        split: str = "all",
        val_percent: float = 5.0,
        verify: bool = False,
    ) -> None:
        if split not in ("train", "val", "all"):
            raise ValueError(f"split must be 'train', 'val' or 'all', not {split!r}")
        roots = [root] if isinstance(root, str | Path) else list(root)
        paths = [shard for r in roots for shard in find_shards(r)]
        if not paths:
            raise DatasetError(f"no shards found under {', '.join(map(str, roots))}")
        self.split, self.val_percent = split, val_percent
        self.shards = [Shard(p, verify=verify) for p in paths]
        self.manifest = self._read_manifests(roots)
        self._shard_index, self._row_index = self._build_index()

    @staticmethod
    def _read_manifests(roots: list[Path | str]) -> dict:
        """The manifest.json of each root that has one (a single one is returned as is)."""
        manifests = {}
        for root in roots:
            file = Path(root) / "manifest.json"
            if file.is_file():
                try:
                    manifests[str(root)] = json.loads(file.read_text())
                except ValueError as error:
                    raise DatasetError(f"{file}: unreadable manifest: {error}") from None
        return next(iter(manifests.values())) if len(manifests) == 1 else manifests

    def _build_index(self) -> tuple[np.ndarray, np.ndarray]:
        shard_index, row_index = [], []
        for s, shard in enumerate(self.shards):
            rows = np.arange(len(shard))
            if self.split != "all":
                keys = np.ascontiguousarray(shard.states[:, :KEY_LENGTH])
                val = np.fromiter(
                    (_hash_percent(k.tobytes()) < self.val_percent for k in keys), bool, len(keys)
                )
                rows = rows[val] if self.split == "val" else rows[~val]
            shard_index.append(np.full(len(rows), s, dtype=np.int32))
            row_index.append(rows)
        return np.concatenate(shard_index), np.concatenate(row_index)

    def __len__(self) -> int:
        return len(self._row_index)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} positions")
        return self.shards[self._shard_index[index]][int(self._row_index[index])]

    @property
    def num_action_values(self) -> int:
        """Number of (position, move) values in the chosen split."""
        total = 0
        for s, shard in enumerate(self.shards):
            rows = self._row_index[self._shard_index == s]
            total += int((shard.offsets[rows + 1] - shard.offsets[rows]).sum())
        return total

"""Annotated shards: the on-disk dataset the trainer reads, and its train/validation split.

A *shard* is a directory of plain ``.npy`` arrays, so it can be memory-mapped with
``np.load(path, mmap_mode="r")`` and inspected with nothing but numpy::

    chunk-000042/
        states.npy    uint8   [P, 77]   state tokens (engine/facts/tokenizer.py), a row per position
        offsets.npy   int64   [P + 1]   position i owns moves/wins[offsets[i]:offsets[i + 1]]
        moves.npy     int16   [M]       legal move ids (engine/facts/moves.py vocabulary, < 1968)
        wins.npy      float32 [M]       win probability of each move for the side that plays it
        meta.json                       format, counts, sha256 and whatever the writer adds

``offsets[0] == 0``, ``offsets[P] == M`` and offsets strictly increase (every stored position
has at least one legal move). Moves are stored in python-chess generation order, the order of
``legal_move_ids(board)``.

A shard is written (training/data/shard_publish.py) to a hidden temporary directory, fsynced and
renamed into place, so a shard either exists whole or not at all; readers skip hidden
directories. Its ``sha256`` covers the four array files in the order above (meta.json holds
the checksum, so it is not covered).

Generate writes the compact ``oneply-shard-v2`` format (training/data/compact.py: tokens and one
quantised value per legal move, compressed); ``Shard`` reads both formats transparently.

The train/validation split is a stable hash of the position (board, side, castling, en
passant; not the move counters), so a position lands in the same split in every shard, every
run and on every machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from oneply.engine.facts.encoding import token_move_ids
from oneply.engine.facts.moves import NUM_MOVES
from oneply.engine.facts.tokenizer import KEY_LENGTH, STATE_LENGTH, VOCAB_SIZE, position_key
from oneply.training.data import compact

FORMAT = "oneply-shard-v1"
ARRAYS = ("states", "offsets", "moves", "wins")
#: tokens 0..70 are side (1), board (64), castling (4) and en passant (2); the rest are counters


class DatasetError(ValueError):
    """A shard or dataset that cannot be read: missing, truncated, corrupt or inconsistent."""


# --------------------------------------------------------------------------- split


def puzzle_keys(paths: Sequence[Path | str]) -> set[bytes]:
    """position_key of every position along every puzzle line of Lichess puzzle CSVs: the FEN,
    then after each move. Training data must never contain them (they are the evaluation)."""
    import csv

    import chess

    from oneply.engine.facts.tokenizer import tokenize

    keys: set[bytes] = set()
    for path in paths:
        try:
            with open(path, newline="") as file:
                rows = list(csv.DictReader(file))
        except OSError as error:
            raise DatasetError(f"{path}: cannot read puzzle CSV: {error}") from None
        if rows and not {"FEN", "Moves"} <= rows[0].keys():
            raise DatasetError(f"{path}: a puzzle CSV needs FEN and Moves columns")
        for number, row in enumerate(rows, 2):
            try:
                board = chess.Board(row["FEN"])
                keys.add(position_key(tokenize(board)))
                for uci in row["Moves"].split():
                    board.push_uci(uci)
                    keys.add(position_key(tokenize(board)))
            except ValueError as error:
                raise DatasetError(f"{path}:{number}: bad puzzle row: {error}") from None
    return keys


def _hash64(key: bytes) -> int:
    """A stable 64-bit hash of a position key (blake2b, not hash())."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def _hash_percent(key: bytes) -> float:
    """A stable pseudo-random number in [0, 100) from a position key."""
    return _hash64(key) % 1_000_000 / 10_000


def is_validation(state_tokens: np.ndarray, val_percent: float = 5.0) -> bool:
    """Whether a position belongs to the validation split (about val_percent % of positions)."""
    return _hash_percent(position_key(state_tokens)) < val_percent


def array_sha256(directory: Path) -> str:
    """A v1 shard's checksum: its four array files, in ARRAYS order (meta.json holds it)."""
    digest = hashlib.sha256()
    for name in ARRAYS:
        with open(directory / f"{name}.npy", "rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- reading


class Shard:
    """One shard of either format, v1 memory-mapped, v2 (compact) loaded; opening it checks
    that it is whole and consistent.

    The checks are cheap relative to training (one pass over the arrays) and turn a truncated
    or corrupt file into a DatasetError naming it, instead of garbage batches or a numpy
    error from deep inside a DataLoader. ``verify=True`` also recomputes the sha256.
    """

    def __init__(self, path: Path | str, verify: bool = False) -> None:
        self.path = Path(path)
        self.meta = self._read_meta()
        self.compact = self.meta["format"] == compact.FORMAT
        if self.compact:
            self._open_compact(verify)
            return
        self.states, self.offsets, self.moves, self.wins = (self._load(n) for n in ARRAYS)
        self._check_structure()
        self._check_values()
        if verify and self.meta.get("sha256") != array_sha256(self.path):
            raise DatasetError(f"{self.path}: sha256 does not match meta.json (corrupt shard)")

    def _open_compact(self, verify: bool) -> None:
        file = self.path / compact.DATA
        try:
            arrays = compact.load(self.path)
        except FileNotFoundError:
            raise DatasetError(f"{file}: missing") from None
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
            raise DatasetError(f"{file}: truncated or corrupt: {error}") from None
        problem = compact.check(arrays, self.meta)
        if problem:
            raise DatasetError(f"{file}: {problem}")
        if verify and self.meta.get("sha256") != hashlib.sha256(file.read_bytes()).hexdigest():
            raise DatasetError(f"{self.path}: sha256 does not match meta.json (corrupt shard)")
        self.states, self.values = arrays["states"], arrays["values"]
        self.counts = arrays["counts"]
        #: best-only shards: the one scored slot per row (training/data/compact.py)
        self.best = arrays.get("best")
        self.offsets = np.zeros(len(self.states) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=self.offsets[1:])
        # move ids are recomputed from the position the first time a row is read, then kept
        # (2 bytes per value): the trainer reads each row many times
        self.moves = np.zeros(len(self.values), dtype=np.int16)
        self._have_moves = np.zeros(len(self.states), dtype=bool)

    def _read_meta(self) -> dict[str, Any]:
        file = self.path / "meta.json"
        try:
            meta = json.loads(file.read_text())
        except FileNotFoundError:
            raise DatasetError(f"{file}: missing (not a shard, or an unfinished one)") from None
        except (OSError, ValueError) as error:
            raise DatasetError(f"{file}: unreadable shard metadata: {error}") from None
        if not isinstance(meta, dict) or meta.get("format") not in (FORMAT, compact.FORMAT):
            raise DatasetError(f"{file}: not a {FORMAT} or {compact.FORMAT} shard")
        return meta

    def _load(self, name: str) -> np.ndarray:
        file = self.path / f"{name}.npy"
        try:
            array: np.ndarray = np.load(file, mmap_mode="r", allow_pickle=False)
            return array
        except FileNotFoundError:
            raise DatasetError(f"{file}: missing") from None
        except (OSError, ValueError, EOFError) as error:
            raise DatasetError(f"{file}: truncated or corrupt: {error}") from None

    def _fail(self, name: str, problem: str) -> NoReturn:
        raise DatasetError(f"{self.path / (name + '.npy')}: {problem}")

    def _check_structure(self) -> None:
        expected = {"states": np.uint8, "offsets": np.int64, "moves": np.int16, "wins": np.float32}
        for name, dtype in expected.items():
            if getattr(self, name).dtype != dtype:
                self._fail(name, f"dtype {getattr(self, name).dtype}, expected {np.dtype(dtype)}")
        if self.states.ndim != 2 or self.states.shape[1] != STATE_LENGTH:
            self._fail("states", f"shape {self.states.shape}, expected [P, {STATE_LENGTH}]")
        count = len(self.states)
        if count != self.meta.get("count"):
            self._fail("states", f"{count} positions, meta.json says {self.meta.get('count')}")
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
        return int(self.offsets[-1])

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(state int64[77], move_ids int64[n], wins float32[n]) of position ``index``."""
        start, stop = self.offsets[index], self.offsets[index + 1]
        state = np.array(self.states[index], dtype=np.int64)
        if self.compact:
            if not self._have_moves[index]:
                self._recompute_moves(index, state, start, stop)
            return state, self.moves[start:stop].astype(np.int64), self._wins(index, start, stop)
        return (
            state,
            np.array(self.moves[start:stop], dtype=np.int64),
            np.array(self.wins[start:stop], dtype=np.float32),
        )

    def _recompute_moves(self, index: int, state: np.ndarray, start: int, stop: int) -> None:
        """A v2 row's move ids follow from its position (python-chess generation order)."""
        moves = token_move_ids(state)
        if len(moves) != stop - start:
            raise DatasetError(
                f"{self.path}: row {index} has {len(moves)} legal moves, "
                f"the shard stores {stop - start} values (corrupt shard)"
            )
        self.moves[start:stop] = moves
        self._have_moves[index] = True

    def _wins(self, index: int, start: int, stop: int) -> np.ndarray:
        wins = compact.dequantise(self.values[start:stop])
        if self.best is not None:  # a best-only row: the other moves were never scored
            slot = int(self.best[index])
            wins[np.arange(len(wins)) != slot] = compact.UNSCORED
        return wins

    @property
    def labels(self) -> str:
        """``best`` for a best-only shard (one scored move per row), else ``all``."""
        return str(self.meta.get("labels", "all"))

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
    # os.walk, not rglob: it never enters a hidden directory, and one that vanishes while it
    # looks (generate renames each finished shard into place) is skipped, not an error
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        if "meta.json" in files:
            found.append(Path(directory))
    return sorted(found, key=lambda shard: shard / "meta.json")  # the order rglob gave


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
    def _read_manifests(roots: list[Path | str]) -> dict[str, Any]:
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
        """(shard, row) of each chosen position. A position stored twice (directories made on
        several hosts, ``generate --shard K/N``) is read once: its first occurrence."""
        shard_index, row_index, hashes = [], [], []
        for s, shard in enumerate(self.shards):
            keys = np.ascontiguousarray(shard.states[:, :KEY_LENGTH])
            shard_hashes = np.fromiter((_hash64(k.tobytes()) for k in keys), np.uint64, len(keys))
            rows = np.arange(len(shard))
            if self.split != "all":
                val = (shard_hashes % 1_000_000) / 10_000 < self.val_percent
                rows = rows[val] if self.split == "val" else rows[~val]
            shard_index.append(np.full(len(rows), s, dtype=np.int32))
            row_index.append(rows)
            hashes.append(shard_hashes[rows])
        all_hashes = np.concatenate(hashes)
        _, first = np.unique(all_hashes, return_index=True)
        keep = np.sort(first)
        return np.concatenate(shard_index)[keep], np.concatenate(row_index)[keep]

    def __len__(self) -> int:
        return len(self._row_index)

    @property
    def labels(self) -> set[str]:
        """The shards' labels: ``{"all"}``, ``{"best"}`` or both (training/data/compact.py)."""
        return {shard.labels for shard in self.shards}

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} positions")
        shard: AnnotatedDataset = self.shards[self._shard_index[index]]
        return shard[int(self._row_index[index])]

    def state(self, index: int) -> np.ndarray:
        """The state tokens of position ``index`` alone: no move ids (which a compact shard
        recomputes with python-chess, ~0.4 ms a position)."""
        return np.asarray(self.shards[self._shard_index[index]].states[int(self._row_index[index])])

    def move_counts(self, indices: np.ndarray) -> np.ndarray:
        """Legal moves of each position in ``indices``, from the shards' offsets alone."""
        counts = np.empty(len(indices), dtype=np.int64)
        shard_of, row_of = self._shard_index[indices], self._row_index[indices]
        for s in np.unique(shard_of):
            here = shard_of == s
            offsets, rows = self.shards[s].offsets, row_of[here]
            counts[here] = offsets[rows + 1] - offsets[rows]
        return counts

    @property
    def num_action_values(self) -> int:
        """Number of (position, move) values in the chosen split (a best-only shard holds one
        per position)."""
        total = 0
        for s, shard in enumerate(self.shards):
            rows = self._row_index[self._shard_index == s]
            if shard.labels == compact.BEST_ONLY:
                total += len(rows)
            else:
                total += int((shard.offsets[rows + 1] - shard.offsets[rows]).sum())
        return total

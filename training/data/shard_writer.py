"""The one shard writer of the scored-position sources (`train generate`, PGN annotation).

A source hands it whole games' new positions, in game order; it writes them as compact
shards (training/data/compact.py) of whole games, so a run killed at any moment loses only the
games after the last shard, and a rerun resumes at the first game no shard holds
(:func:`existing`). It also keeps what every source reports: the directory's manifest, the
bytes on disk, and a sample of the positions for the Stockfish-alone rate measurement.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from oneply.engine.facts.tokenizer import position_key
from oneply.engine.files import write_json_atomic
from oneply.training.data.cpu_clock import tree_cpu_seconds
from oneply.training.data.dataset import DatasetError, Shard, find_shards
from oneply.training.data.scored_games import Record
from oneply.training.data.shard_publish import write_compact_shard

MANIFEST = "manifest.json"


class SourceError(RuntimeError):
    """A run that cannot start: bad arguments, a directory made with other settings."""


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard K/N``: this run does the games (or chunks) g with g % N == K."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard must look like k/n, not {text!r}") from None
    if not (n >= 1 and 0 <= k < n):
        raise argparse.ArgumentTypeError(f"--shard k/n needs 0 <= k < n, got {text!r}")
    return k, n


def existing(out: Path, shard: str, match: dict[str, Any] | None = None) -> tuple[set[bytes], int]:
    """Dedup keys of every position in DIR's shards, and the first game no shard of this
    ``--shard`` spec (and whose meta.json has the items of ``match``) holds."""
    keys: set[bytes] = set()
    next_game = 0
    paths = find_shards(out) if out.exists() else []
    for path in paths:
        try:
            loaded = Shard(path)
        except DatasetError as error:
            raise SourceError(f"{error}; move the broken shard away and rerun") from None
        keys.update(position_key(row) for row in np.asarray(loaded.states))
        mine = all(loaded.meta.get(key) == value for key, value in (match or {}).items())
        if mine and loaded.meta.get("shard", "0/1") == shard and "games" in loaded.meta:
            next_game = max(next_game, int(loaded.meta["games"][1]))
    return keys, next_game


def data_bytes(out: Path) -> int:
    """Bytes on disk of DIR's shards (data and metadata)."""
    return sum(f.stat().st_size for p in find_shards(out) for f in p.iterdir() if f.is_file())


class Reservoir:
    """A uniform sample of the FENs seen so far (reservoir sampling, a fixed seed): the
    Stockfish-alone measurement must see the same mix of positions as the run (the first
    positions of each game have more legal moves, so they are slower to score)."""

    def __init__(self, size: int) -> None:
        self.size, self.seen = size, 0
        self.fens: list[str] = []
        self.rng = random.Random(0)

    def add(self, fens: list[str]) -> None:
        for fen in fens:
            self.seen += 1
            if len(self.fens) < self.size:
                self.fens.append(fen)
            elif (slot := self.rng.randrange(self.seen)) < self.size:
                self.fens[slot] = fen


class Writer:
    """Buffers whole games' new positions and writes them as one shard per ``shard_size``."""

    def __init__(
        self,
        out: Path,
        shard: tuple[int, int],
        meta: dict[str, Any],
        prefix: str,
        workers: int = 1,
    ) -> None:
        self.out, self.shard, self.meta, self.prefix = out, shard, meta, prefix
        self.workers = workers
        #: since the last shard: its labelling CPU (this process, its workers and their
        #: Stockfish; wall time × workers where the system cannot say). The campaign's
        #: labelling CPU-hours are the sum over shards
        self.clock = time.perf_counter()
        self.cpu = tree_cpu_seconds()
        self.records: list[Record] = []
        self.first_game: int | None = None
        self.last_game: int | None = None
        self.games = 0

    def add(self, game: int, records: list[Record]) -> None:
        if self.first_game is None:
            self.first_game = game
        self.last_game = game
        self.games += 1
        self.records.extend(records)

    def flush_added(self) -> None:
        """Write every game added so far (the games scored up to now, whole)."""
        if self.last_game is not None:
            self.flush(self.last_game + 1)

    def flush(self, end_game: int) -> None:
        """Write the buffered games [first_game, end_game) (also when they added nothing, so
        a rerun does not replay them)."""
        if self.first_game is None:
            return
        k, n = self.shard
        name = f"{self.prefix}{k}of{n}-{self.first_game:09d}"
        meta = {**self.meta, "shard": f"{k}/{n}", "games": [self.first_game, end_game]}
        now, cpu = time.perf_counter(), tree_cpu_seconds()
        if cpu is not None and self.cpu is not None and cpu >= self.cpu:
            meta["worker_seconds"], meta["worker_clock"] = round(cpu - self.cpu, 2), "cpu"
        else:  # no /proc, or the tree lost processes it never reaped: an interrupted run's
            # last shard, written after its workers and their Stockfish died, once read −1,598 s
            meta["worker_seconds"] = round((now - self.clock) * self.workers, 2)
            meta["worker_clock"] = "wall"
        self.clock, self.cpu = now, cpu
        if self.records:
            states = np.stack([r.state for r in self.records])
            write_compact_shard(self.out / name, states, [r.wins for r in self.records], meta)
        else:  # games that found nothing new still count as played
            write_compact_shard(self.out / name, np.zeros((0, 77), np.uint8), [], meta)
        self.records, self.first_game = [], None


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    write_json_atomic(out / MANIFEST, manifest)

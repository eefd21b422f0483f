"""`oneply train pgn GAMES.pgn` (also `oneply train annotate GAMES.pgn`): score the unique
positions of the games of a PGN file, a source of training/data/sources.py.

The paper's approach for anyone with a game database: every position of every game (before
each move, and the final one if it has legal moves) is a candidate; the first occurrence in
file order is scored with all its legal moves (training/data/stockfish_scorer.py, a fresh
Stockfish game per position), unless a shard in DIR or an exclusion CSV already has it.

* The file is streamed: games are read one at a time, so its size does not matter. Each
  game's positions go to the sources' one loop (training/data/source_loop.py's
  ``score_positions``), which scores them in a worker pool and writes the shards.
* Shards (compact, training/data/compact.py) hold whole games: ``games: [first, end)`` in their
  meta.json. A rerun (after SIGKILL, or on a grown file) skips the games already done and
  continues; nothing is lost or duplicated, and the values are the same.
* ``--shard K/N`` takes games g % N == K, so N hosts can split one file, one directory each.
* Games of other variants (a ``Variant`` header other than standard) are skipped; a game
  with an illegal move contributes the positions before it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.training.data.dataset import puzzle_keys
from oneply.training.data.scored_games import GameSettings
from oneply.training.data.shard_writer import SourceError, Writer, existing, write_manifest
from oneply.training.data.source_loop import SourceRun, score_positions
from oneply.training.data.sources import (
    ScoringJob,
    add_scoring_arguments,
    rate_fields,
    run_source,
    scoring_job,
)

SHARD_PREFIX = "pgn-"
STANDARD = {"standard", "chess", "from position"}


def game_positions(game: chess.pgn.Game) -> Iterator[chess.Board]:
    """Each position of a game's main line that has a legal move, in order (no move stack)."""
    board = game.board()
    for move in game.mainline_moves():
        yield board.copy(stack=False)
        board.push(move)
    if any(board.legal_moves):
        yield board.copy(stack=False)


def read_games(
    path: Path, first: int, shard: tuple[int, int]
) -> Iterator[tuple[int, list[chess.Board]]]:
    """(game number, its positions) for the games from ``first`` on that belong to ``shard``."""
    k, n = shard
    with open(path, encoding="utf-8", errors="replace") as handle:
        number = 0
        while True:
            if number < first or number % n != k:
                if not chess.pgn.skip_game(handle):
                    return
                number += 1
                continue
            game = chess.pgn.read_game(handle)
            if game is None:
                return
            variant = game.headers.get("Variant", "Standard").lower()
            positions = list(game_positions(game)) if variant in STANDARD else []
            yield number, positions
            number += 1


def collect(job: ScoringJob) -> dict[str, Any]:
    """One run of the source (see training/data/sources.py)."""
    out = job.out
    if not job.positions.is_file():
        raise SourceError(f"{job.positions}: PGN file not found")
    out.mkdir(parents=True, exist_ok=True)
    settings = GameSettings(depth=job.depth, nodes=job.nodes)
    k, n = job.shard
    source = {"pgn": job.positions.name, "limit": {"depth": settings.depth, "nodes": job.nodes}}
    keys, first_game = existing(out, f"{k}/{n}", match={"source": source})
    have = len(keys)
    known = keys | puzzle_keys(job.exclude)
    writer = Writer(out, (k, n), {"source": source}, SHARD_PREFIX)
    run = SourceRun(
        writer,
        known,
        job.workers,
        initargs=(settings, job.stockfish, [], [], os.getpid()),
        shard_positions=job.chunk_size,
        bench_sample=job.bench_sample,
        desc="annotate",
    )
    totals = score_positions(run, read_games(job.positions, first_game, (k, n)))
    manifest = {"format": "oneply-pgn-annotate-v1", "source": source, "exclude": list(job.exclude)}
    write_manifest(out, {**manifest, "positions": have + totals.new})
    return {
        "positions": have + totals.new,
        "new": totals.new,
        "games": totals.games,
        **rate_fields(out, have + totals.new, totals.new, totals.seconds, totals.bench),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("positions", type=Path, metavar="GAMES.pgn", help="a PGN file of games")
    parser.add_argument("--out", type=Path, required=True, help="output directory of shards")
    add_scoring_arguments(parser, str(DEV_PUZZLES))


def run_as(name: str, job: ScoringJob) -> int:
    """The source as `oneply train NAME` (``pgn``, or ``annotate`` given a .pgn file)."""
    return run_source(name, lambda: collect(job), job.json)


def run(args: argparse.Namespace) -> int:
    return run_as("pgn", scoring_job(args))

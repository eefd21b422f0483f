"""Sources of scored positions behind one interface: one scorer, one shard writer, one report.

A source is a `oneply train` step (so it has ``--help``) that finds candidate positions
somewhere — score-driven self-play (``generate``), the games of a PGN file (``pgn``), next
perhaps an EPD list or a Lichess database export — and hands them to the shared parts:

* the one scorer: every position's legal moves valued by Stockfish through the worker pool of
  training/data/score_workers.py (training/data/stockfish_scorer.py's UCI pipe, a fresh Stockfish
  game per position, so values depend on the position and the limit alone);
* the one shard writer, training/data/shard_writer.py's ``Writer``: compact shards of whole games,
  resumable at the first game no shard holds, deduplicated against the directory and the
  exclusion CSVs (the dev puzzles by default);
* one way to finish (:func:`run_source`): the same result fields — positions, rate, and
  Stockfish's own rate on a sample of the run's positions, so the overhead is measured — the
  same errors, and the same Ctrl-C/SIGTERM handling (whole games are kept).

The worker pool, the deduplication and the shard flushing are one loop for all of them,
training/data/source_loop.py: a source that reads positions hands it ``(game number, boards)`` per
game (:func:`~oneply.training.data.source_loop.score_positions`), self-play hands it game numbers
(:func:`~oneply.training.data.source_loop.play_games`).

A new source is a module with ``SHARD_PREFIX``, ``add_arguments(parser)``, ``collect(job) ->
dict`` (one run from its typed config, read once from the command line: a ``Writer`` and its
candidate positions per game through ``score_positions``; :func:`rate_fields` for its numbers)
and ``run(args)`` returning ``run_source(NAME, lambda: collect(job), job.json)``, plus its line
in :data:`SOURCES` and in training/cli.py's steps.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oneply.engine.cli import read_args
from oneply.engine.errors import CommandError
from oneply.engine.stockfish import LOOKUP_TEXT
from oneply.training.data.dataset import DatasetError
from oneply.training.data.openings import OpeningsError
from oneply.training.data.shard_writer import SourceError, data_bytes, parse_shard
from oneply.training.data.workers import add_workers_argument

#: step name → module of every source of scored positions
SOURCES: dict[str, str] = {
    "generate": "oneply.training.data.generate",
    "pgn": "oneply.training.data.pgn_annotate",
}

#: Stockfish's limit when a source is given neither --depth nor --nodes (annotation's default)
DEFAULT_DEPTH = 8
#: positions per shard (``--chunk-size``) of the file-reading sources
DEFAULT_CHUNK_SIZE = 256
#: positions scored again by Stockfish alone to measure a run's overhead
BENCH_SAMPLE = 500


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def rate_fields(
    out: Path, total: int, new: int, seconds: float, bench: float | None
) -> dict[str, Any]:
    """What every source reports about its speed: its own rate, Stockfish's alone, the
    overhead between them, and the bytes a position takes on disk."""
    rate = new / max(seconds, 1e-9)
    return {
        "seconds": round(seconds, 2),
        "positions_per_s": round(rate, 1),
        "stockfish_positions_per_s": bench,
        "overhead": round(1 - rate / bench, 3) if bench else None,
        "bytes_per_position": round(data_bytes(out) / max(total, 1), 1),
    }


def run_source(name: str, collect: Callable[[], dict[str, Any]], as_json: bool) -> int:
    """One source run as a command: its result as one line (or JSON with ``--json``); bad
    input a CommandError; an interrupted run keeps its whole games and exits 130."""
    try:
        result = collect()
    except (SourceError, OpeningsError, DatasetError) as error:
        raise CommandError(f"oneply train {name}: error: {error}", exit_code=2) from None
    except KeyboardInterrupt:
        print("\ninterrupted: whole games are kept; rerun to resume", file=sys.stderr)
        return 130
    if as_json:
        print(json.dumps(result))
    else:
        print(", ".join(f"{key} {value}" for key, value in result.items()))
    return 0


def add_scoring_arguments(parser: argparse.ArgumentParser, exclude_default: str) -> None:
    """The Stockfish limit, workers, sharding and reporting options of the file-reading
    sources (`train annotate` and `train pgn`)."""
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument(
        "--depth", type=positive, help=f"search depth per position (default {DEFAULT_DEPTH})"
    )
    limit.add_argument("--nodes", type=positive, help="node budget per position instead")
    add_workers_argument(
        parser, "Stockfish processes, one thread each (default: all cores)", positive
    )
    parser.add_argument(
        "--chunk-size", type=positive, default=DEFAULT_CHUNK_SIZE, help="positions per shard"
    )
    parser.add_argument(
        "--shard", type=parse_shard, default=(0, 1), metavar="K/N", help="do chunks i%%N == K"
    )
    parser.add_argument(
        "--stockfish", default="", help=f"Stockfish binary (default: {LOOKUP_TEXT})"
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[exclude_default],
        help="PGN input: puzzle CSV whose positions are never scored (repeatable; default dev)",
    )
    parser.add_argument("--json", action="store_true", help="PGN input: print the result as JSON")
    parser.add_argument(
        "--bench-sample",
        type=int,
        default=BENCH_SAMPLE,
        help="PGN input: positions scored by Stockfish alone to measure the overhead (0: skip)",
    )


@dataclass(frozen=True)
class ScoringJob:
    """One run of a file-reading source (`train annotate`, `train pgn`), read once from its
    command line by :func:`scoring_job` (each option's help is in :func:`add_scoring_arguments`
    and the modules' ``add_arguments``)."""

    positions: Path
    out: Path
    #: the limit: a depth, or (``--nodes``) a node budget and no depth
    depth: int | None
    nodes: int | None
    workers: int
    chunk_size: int = DEFAULT_CHUNK_SIZE
    shard: tuple[int, int] = (0, 1)
    stockfish: str = ""
    exclude: tuple[str, ...] = ()
    json: bool = False
    bench_sample: int = BENCH_SAMPLE


def scoring_job(args: argparse.Namespace) -> ScoringJob:
    """The run the parsed command line asks for: ``--nodes`` leaves no depth, and neither
    ``--depth`` nor ``--nodes`` means depth :data:`DEFAULT_DEPTH`."""
    depth = None if args.nodes else args.depth or DEFAULT_DEPTH
    return read_args(ScoringJob, args, depth=depth, exclude=tuple(args.exclude))

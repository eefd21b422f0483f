"""`oneply train generate`: N unique Stockfish-scored positions in DIR, made by score-driven games
(a source of training/data/sources.py).

The games are in training/data/scored_games.py. This module checks the run's inputs and hands the
games to the sources' one loop (training/data/source_loop.py's ``play_games``: a worker pool, the
shard writer), which writes what they score as compact shards (training/data/compact.py) into the
output directory:

* Game g is played from its own random stream (seed, g) and never looks at what other games
  did, so the games — and their values — are the same for any worker count. The positions are
  filtered in game order: the first occurrence of a position is kept, unless an earlier shard
  or an exclusion CSV (default: the project's dev puzzles) has it.
* ``--count N`` means N unique positions in DIR: a rerun with a larger N adds the difference,
  a rerun with the same N does nothing.
* A shard holds whole games (``games: [first, end)`` in its meta.json) and is written whole or
  not at all. A run killed at any moment (even SIGKILL) loses only the games after the last
  shard; a rerun continues at the first game no shard holds and, since games are
  reproducible, ends with the very positions and values of an uninterrupted run.
* ``--shard K/N`` plays games K, K+N, K+2N, …: N hosts with one directory each split one job
  between them, and the trainer reads all their directories (duplicates across hosts are
  dropped when reading, training/data/dataset.py).
* ``manifest.json`` records the settings (every knob, defaults included) and the counts.
* ``--labels best`` labels each position with Stockfish's best move and its value only (one
  search without MultiPV, training/data/best_games.py): what ``fit --predictor sv|bc`` reads, at
  about twice the positions/s. Its shards say ``labels: best`` (training/data/compact.py), and so
  do the manifest's settings: a directory holds one kind of label, and a rerun with the other
  is refused. ``all`` (the default) records nothing new, so its output and manifests are what
  they were before the flag existed.
* ``--json`` reports the rate and, measured in the same run on a sample of the same positions
  through the same scoring function with no game logic, Stockfish's own rate: the ratio is
  the overhead of everything else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.arena.settings import DEBIAN_BOOKS
from oneply.engine.cli import read_args
from oneply.engine.model.model_file import ModelFileError
from oneply.engine.stockfish import LOOKUP_TEXT
from oneply.training.data.dataset import puzzle_keys
from oneply.training.data.learner import DEFAULT_SHARE, file_digest, model_learner
from oneply.training.data.openings import DEFAULT_ECO, check_books, load_eco_lines
from oneply.training.data.scored_games import GameSettings
from oneply.training.data.shard_publish import remove_stale_temporaries
from oneply.training.data.shard_writer import (
    MANIFEST,
    SourceError,
    Writer,
    existing,
    parse_shard,
    write_manifest,
)
from oneply.training.data.source_loop import SourceRun, play_games
from oneply.training.data.sources import BENCH_SAMPLE, rate_fields, run_source
from oneply.training.data.stockfish_scorer import StockfishScorer

SHARD_PREFIX = "gen-"

# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class GenerateJob:
    """One `train generate` run, read once from its command line (each option's help is in
    :func:`add_arguments`): where, how many, how the games are played and scored."""

    out: Path
    count: int
    game: GameSettings
    workers: int
    labels: str = "all"
    shard: tuple[int, int] = (0, 1)
    learner: str | None = None
    shard_size: int = 4096
    stockfish: str = ""
    book: tuple[str, ...] = ()
    eco: str | None = None
    exclude: tuple[str | Path, ...] = ()
    bench_sample: int = BENCH_SAMPLE


def generate_job(args: argparse.Namespace) -> GenerateJob:
    """The run the parsed command line asks for, its game settings checked."""
    knobs = {f.name: getattr(args, f.name) for f in fields(GameSettings) if hasattr(args, f.name)}
    knobs["learner_share"] = learner_share(args.learner, args.learner_share)
    return read_args(
        GenerateJob,
        args,
        out=Path(args.out),
        game=game_settings(knobs, nodes_given=bool(args.nodes)),
        book=tuple(args.book or ()),
        exclude=tuple(args.exclude),
    )


def game_settings(knobs: dict[str, Any], nodes_given: bool) -> GameSettings:
    """The games' settings from the options named like its fields (a node limit replaces the
    depth), checked."""
    if nodes_given:
        knobs = {**knobs, "depth": None}
    settings = GameSettings(**knobs)
    if settings.depth is None and settings.nodes is None:
        raise SourceError("give --depth or --nodes")
    if not 0 < settings.min_temperature <= settings.max_temperature:
        raise SourceError("need 0 < --min-temperature <= --max-temperature")
    if not 0 <= settings.random_share + settings.greedy_share <= 1:
        raise SourceError("--random-share + --greedy-share must be in [0, 1]")
    return settings


def learner_share(learner: str | None, share: float | None) -> float:
    """The share of games the learner plays in: `--learner-share`, by default
    training/data/learner.py's DEFAULT_SHARE with `--learner` and 0 without one."""
    if share is None:
        return DEFAULT_SHARE if learner else 0.0
    if not learner:
        raise SourceError("--learner-share needs --learner MODEL.onnx (the model that plays)")
    if not 0 < share <= 1:
        raise SourceError("--learner-share must be in (0, 1]")
    return float(share)


def recorded_game(settings: GameSettings) -> dict[str, Any]:
    """The game settings a manifest records. Without a learner its share is left out, so
    the directories written before the learner existed resume unchanged."""
    game = asdict(settings)
    if not settings.learner_share:
        del game["learner_share"]
    return game


def checked_learner(path: str) -> dict[str, Any]:
    """The learner's record (file name and SHA-256), once the file has loaded as a model:
    a wrong file fails here, before any game, with the model loader's message."""
    try:
        model_learner(path)
    except ModelFileError as error:
        raise SourceError(f"--learner: {error}") from None
    return {"file": Path(path).name, "sha256": file_digest(path)}


def checked_inputs(job: GenerateJob) -> tuple[dict[str, Any], list[str], list[list[str]]]:
    """(the settings DIR's manifest records, the books, the ECO lines), every input checked.

    They are checked before anything is written: a failed start must not leave a manifest
    whose settings then refuse the corrected command."""
    books = [str(p) for p in (job.book or [p for p in DEBIAN_BOOKS if p.exists()])]
    check_books(books)
    eco = load_eco_lines(Path(job.eco) if job.eco else None)
    engine = StockfishScorer(job.stockfish)
    version = engine.id.get("name", "unknown")
    engine.quit()
    recorded: dict[str, Any] = {
        "game": recorded_game(job.game),
        "stockfish": version,
        "books": books,
    }
    recorded["eco"] = job.eco
    if job.labels != "all":  # absent means all: directories made before the flag still resume
        recorded["labels"] = job.labels
    if job.game.learner_share:  # absent: no learner (the same rule)
        assert job.learner is not None  # learner_share() refuses a share without a learner
        recorded["learner"] = checked_learner(job.learner)
    return recorded, books, eco


def check_labels(out: Path, recorded: dict[str, Any], manifest: dict[str, Any]) -> None:
    """A directory holds one kind of label: refuse a rerun that asks for the other."""
    if "settings" not in manifest:
        return
    had = manifest["settings"].get("labels", "all")
    wanted = recorded.get("labels", "all")
    if had != wanted:
        raise SourceError(
            f"{out} holds --labels {had} data and this run asks for --labels {wanted}; "
            f"rerun with --labels {had} or use another --out"
        )


def run_generate(job: GenerateJob) -> dict[str, Any]:
    out = job.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in remove_stale_temporaries(out):
        print(f"removed {stale.name}: left by an interrupted run", file=sys.stderr)
    k, n = job.shard
    recorded, books, eco = checked_inputs(job)
    manifest_file = out / MANIFEST
    manifest = json.loads(manifest_file.read_text()) if manifest_file.exists() else {}
    check_labels(out, recorded, manifest)
    if manifest.get("settings", recorded) != recorded:
        raise SourceError(
            f"{out} was generated with other settings ({manifest['settings']}); "
            "use another --out or the same settings"
        )
    keys, next_game = existing(out, f"{k}/{n}")
    have = len(keys)
    known = keys | puzzle_keys(job.exclude)
    manifest.update(
        settings=recorded, format="oneply-generate-v1", exclude=[str(p) for p in job.exclude]
    )
    write_manifest(out, {**manifest, "positions": have})
    wanted = job.count - have
    result: dict[str, float | int | None] = {
        "positions": have,
        "new": 0,
        "seconds": 0.0,
        "positions_per_s": 0.0,
    }
    if wanted <= 0:
        return result
    meta: dict[str, Any] = {"settings": recorded}
    if job.labels != "all":
        meta["labels"] = job.labels  # what the reader looks at (training/data/compact.py)
    writer = Writer(out, (k, n), meta, SHARD_PREFIX, workers=job.workers)
    run = SourceRun(
        writer,
        known,
        job.workers,
        initargs=(job.game, job.stockfish, books, eco, os.getpid(), job.labels, job.learner),
        shard_positions=job.shard_size,
        bench_sample=job.bench_sample,
        desc="generate",
        wanted=wanted,
    )
    try:
        totals = play_games(run, next_game)
    finally:
        write_manifest(out, {**manifest, "positions": have + run.totals.new})
    new = totals.new
    total = have + new
    result.update(
        positions=total,
        new=new,
        scored=totals.scored,
        games=totals.games,
        workers=job.workers,
        **rate_fields(out, total, new, totals.seconds, totals.bench),
    )
    return result


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = GameSettings()
    parser.add_argument("--out", type=Path, required=True, help="output directory (shards)")
    parser.add_argument("--count", type=int, required=True, help="unique positions wanted in DIR")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--depth", type=int, default=d.depth, help="Stockfish depth (default 2)")
    limit.add_argument("--nodes", type=int, default=None, help="node limit instead of --depth")
    parser.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument(
        "--labels",
        choices=("all", "best"),
        default="all",
        help="all: every legal move's value (any predictor); best: only the best move and its "
        "value, one search per position (fit --predictor sv|bc; measured 1.45x faster at depth 2)",
    )
    parser.add_argument(
        "--shard", type=parse_shard, default=(0, 1), metavar="K/N", help="play games g%%N == K"
    )
    for name, text in (
        ("min_temperature", "softmax temperature, lowest (per game, log-uniform)"),
        ("max_temperature", "softmax temperature, highest"),
        ("random_share", "share of uniformly random moves"),
        ("greedy_share", "share of one-ply greedy captures"),
        ("book_share", "share of games opening from a polyglot book"),
        ("eco_share", "share of games opening with an ECO line"),
    ):
        flag = "--" + name.replace("_", "-")
        default = getattr(d, name)
        parser.add_argument(flag, type=float, default=default, help=f"{text} (default {default})")
    parser.add_argument(
        "--decided-win",
        type=float,
        default=d.decided_win,
        help=f"a game ends after --decided-plies positions whose best value is at least this "
        f"or at most 1 − this (default {d.decided_win})",
    )
    parser.add_argument("--decided-plies", type=int, default=d.decided_plies)
    parser.add_argument("--max-plies", type=int, default=d.max_plies)
    parser.add_argument(
        "--learner",
        metavar="MODEL.onnx",
        help="a model file that plays one side (its plain argmax) of a share of the games, so "
        "that the positions its own moves lead to are labelled too (training/data/learner.py)",
    )
    parser.add_argument(
        "--learner-share",
        type=float,
        default=None,
        help=f"share of games the learner plays in (default {DEFAULT_SHARE} with --learner)",
    )
    parser.add_argument("--shard-size", type=int, default=4096, help="positions per shard, about")
    parser.add_argument("--stockfish", default="", help=f"Stockfish (default: {LOOKUP_TEXT})")
    parser.add_argument(
        "--book",
        action="append",
        help="polyglot opening book (repeatable; default: the Debian books that exist)",
    )
    parser.add_argument("--eco", default=str(DEFAULT_ECO) if DEFAULT_ECO.exists() else None)
    parser.add_argument(
        "--exclude",
        action="append",
        default=[DEV_PUZZLES],
        help="puzzle CSV whose positions are never emitted (repeatable)",
    )
    parser.add_argument(
        "--bench-sample",
        type=int,
        default=BENCH_SAMPLE,
        help="positions scored again by Stockfish alone to measure the overhead (0: skip)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    return run_source("generate", lambda: run_generate(generate_job(args)), args.json)

"""`oneply train annotate`: Stockfish scores every legal move of every position.

The positions file (one FEN per line, from `oneply train positions`) is cut into fixed chunks:
chunk i holds lines [i·S, (i+1)·S). Each finished chunk becomes one shard
(``DIR/chunk-000042``, format in training/data/dataset.py), written atomically. A restarted run
skips every chunk whose shard exists and validates, so a run killed at any moment resumes
without losing or duplicating a finished position; ``--shard k/n`` keeps the chunks with
i % n == k, so n machines can split one file and their shard directories can be merged.

Positions are scored by the sources' one scorer: the worker pool of
training/data/score_workers.py, one Stockfish per worker (Threads=1, small hash), one search per
position with MultiPV = number of legal moves; what a value is, and why it depends on the
position alone, is in training/data/stockfish_scorer.py. The parent writes each chunk's shard as
soon as its positions are scored.

Positions without legal moves (mate, stalemate) have nothing to learn and are skipped.

Why this path keeps its own shard format (``oneply-shard-v1``, ``shard_publish.write_shard``)
rather than the sources' compact writer (training/data/shard_writer.py): its output is a documented
public format (docs/training.md, "Dataset format": the FEN-file annotate shards are ``.npy``
files that ``np.load(mmap_mode="r")`` opens), and its unit is a fixed range of input lines, not
a game: every line is kept (a position listed twice is scored twice, nothing is excluded), a
chunk's shard is named by its index and checked against the sha256 of its lines on resume, and
the manifest lists every chunk with its counts and sha256. The compact writer keeps whole games'
first occurrences, deduplicated and filtered, which would change what a run stores. A .pgn file
is not this path: it is the PGN source (training/data/pgn_annotate.py)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np
from tqdm import tqdm

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.facts.moves import MOVE_INDEX
from oneply.engine.facts.tokenizer import TokenizerError, board_from
from oneply.engine.files import write_json_atomic
from oneply.engine.stockfish import StockfishStartError
from oneply.training.data.dataset import DatasetError, Shard
from oneply.training.data.score_workers import init_worker, score_boards
from oneply.training.data.scored_games import GameSettings, Record
from oneply.training.data.shard_publish import write_shard
from oneply.training.data.sources import ScoringJob, add_scoring_arguments, scoring_job
from oneply.training.data.stockfish_scorer import StockfishScorer
from oneply.training.data.workers import run_interruptible, worker_pool


class AnnotateError(RuntimeError):
    """A run that cannot start or continue: bad input, a mismatched output directory."""


@dataclass(frozen=True)
class Settings:
    """What decides the values in a shard; a resumed run must use the same."""

    stockfish: str
    depth: int | None
    nodes: int | None
    chunk_size: int

    def limit(self) -> chess.engine.Limit:
        return chess.engine.Limit(depth=self.depth, nodes=self.nodes)

    def limit_dict(self) -> dict[str, Any]:
        return {"depth": self.depth} if self.depth is not None else {"nodes": self.nodes}


# --------------------------------------------------------------------------- chunks


def read_positions(path: Path) -> list[str]:
    """The lines of the positions file, checked up front so a bad line fails before any work."""
    if not path.is_file():
        raise AnnotateError(f"{path}: positions file not found")
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            board_from(text)
        except TokenizerError as error:
            raise AnnotateError(f"{path}:{number}: {error}") from None
    return lines


def chunk_name(index: int) -> str:
    return f"chunk-{index:06d}"


def chunk_digest(lines: list[str]) -> str:
    """sha256 of a chunk's input lines: a shard is only reused for the very same positions."""
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class Chunk:
    index: int
    first_line: int
    lines: list[str]

    @property
    def digest(self) -> str:
        return chunk_digest(self.lines)


def chunk_boards(chunk: Chunk) -> list[chess.Board]:
    """The chunk's positions that have legal moves, in line order: blank lines, comments,
    checkmates and stalemates have nothing to learn and are skipped."""
    boards = []
    for line in chunk.lines:
        text = line.strip()
        if text and not text.startswith("#"):
            board = board_from(text)
            if any(board.legal_moves):
                boards.append(board)
    return boards


def write_chunk(
    out: Path, chunk: Chunk, settings: Settings, stockfish: str, records: list[Record]
) -> dict[str, Any]:
    """A chunk's scored positions as its v1 shard (a chunk is written whole, atomically);
    returns the manifest entry."""
    skipped = len(chunk.lines) - len(records)
    move_ids = []
    for record in records:
        moves = chess.Board(record.fen).legal_moves
        move_ids.append(np.array([MOVE_INDEX[m.uci()] for m in moves], dtype=np.int16))
    meta = {
        "chunk": chunk.index,
        "first_line": chunk.first_line,
        "lines": len(chunk.lines),
        "skipped": skipped,
        "input_sha256": chunk.digest,
        "chunk_size": settings.chunk_size,
        "limit": settings.limit_dict(),
        "stockfish": stockfish,
    }
    states = np.stack([r.state for r in records]) if records else np.zeros((0, 77), np.uint8)
    wins = [r.wins for r in records]
    entry = write_shard(out / chunk_name(chunk.index), states, move_ids, wins, meta)
    return {**entry, "chunk": chunk.index, "skipped": skipped}


def finished_entry(out: Path, chunk: Chunk, settings: Settings) -> dict[str, Any] | None:
    """The manifest entry of a chunk already annotated with these settings, else None.

    A shard that exists but does not validate (cannot happen with atomic writes, short of
    disk corruption) is reported and redone, and so is a last, partial chunk when the positions
    file has grown since (`oneply train positions` appends). A shard made from other positions
    or another limit is an error, because mixing them would silently corrupt the dataset.
    """
    path = out / chunk_name(chunk.index)
    if not path.exists():
        return None
    try:
        shard = Shard(path)
    except DatasetError as error:
        tqdm.write(f"warning: redoing chunk {chunk.index}: {error}")
        return None
    meta = shard.meta
    if meta.get("input_sha256") != chunk.digest:
        done = int(meta.get("lines", 0))
        if done < len(chunk.lines) and meta.get("input_sha256") == chunk_digest(chunk.lines[:done]):
            return None  # the positions file grew since: redo this (last, partial) chunk whole
        raise AnnotateError(f"{path} was made from different positions; use a new --out")
    if meta.get("limit") != settings.limit_dict() or meta.get("chunk_size") != settings.chunk_size:
        raise AnnotateError(
            f"{path} was made with limit {meta.get('limit')} and chunk size "
            f"{meta.get('chunk_size')}, not {settings.limit_dict()} / {settings.chunk_size}"
        )
    keys = ("name", "count", "action_values", "sha256", "chunk", "skipped")
    return {k: meta[k] for k in keys if k in meta}


# --------------------------------------------------------------------------- scoring


def annotate_chunks(
    chunks: list[Chunk], settings: Settings, stockfish: str, out: Path, workers: int, bar: tqdm
) -> list[dict[str, Any]]:
    """Score the chunks in the sources' worker pool (training/data/score_workers.py: the same
    Stockfish scorer, one fresh game per position), two chunks per worker in flight, and
    write each chunk's shard as soon as it is scored, so an interrupted run keeps every
    finished chunk."""
    game = GameSettings(depth=settings.depth, nodes=settings.nodes)
    initargs: tuple[object, ...] = (game, settings.stockfish, [], [], os.getpid())
    report = _bar_updater(bar)
    entries: list[dict[str, Any]] = []
    if not chunks:
        return entries
    todo = iter(chunks)
    with worker_pool(workers, init_worker, initargs, start_method="fork") as pool:
        pending: list[tuple[Chunk, AsyncResult[list[Record]]]] = []
        while True:
            while len(pending) < 2 * workers and (chunk := next(todo, None)) is not None:
                fens = [board.fen() for board in chunk_boards(chunk)]
                pending.append((chunk, pool.apply_async(score_boards, (fens,))))
            if not pending:
                break
            if not pending[0][1].ready():
                pending[0][1].wait(0.2)
            for item in [item for item in pending if item[1].ready()]:
                scored, result = item
                records: list[Record] = result.get()  # re-raises a worker's exception
                entries.append(write_chunk(out, scored, settings, stockfish, records))
                report(len(scored.lines), sum(len(r.wins) for r in records))
                pending.remove(item)
    return sorted(entries, key=lambda entry: entry["chunk"])


def _bar_updater(bar: tqdm) -> Callable[[int, int], None]:
    started = time.monotonic()
    total_values = 0

    def report(positions: int, values: int) -> None:
        nonlocal total_values
        total_values += values
        bar.update(positions)
        rate = total_values / max(time.monotonic() - started, 1e-9)
        bar.set_postfix_str(f"{rate:.0f} values/s", refresh=False)

    return report


# --------------------------------------------------------------------------- manifest


def write_manifest(out: Path, header: dict[str, Any], total_chunks: int) -> dict[str, Any]:
    """Rewrite DIR/manifest.json atomically from the shards that are in DIR now.

    Listing what is on disk (not what this run did) keeps the manifest right after a resume
    and when several ``--shard k/n`` runs share one directory.
    """
    entries = []
    for meta_file in sorted(out.glob("chunk-*/meta.json")):
        meta = json.loads(meta_file.read_text())
        keys = ("name", "chunk", "count", "action_values", "skipped", "sha256")
        entries.append({k: meta.get(k) for k in keys})
    manifest = {
        **header,
        "total_chunks": total_chunks,
        "chunks_done": len(entries),
        "positions": sum(e["count"] for e in entries),
        "action_values": sum(e["action_values"] for e in entries),
        "skipped": sum(e["skipped"] or 0 for e in entries),
        "shards": entries,
    }
    write_json_atomic(out / "manifest.json", manifest)
    return manifest


def _generator_settings(positions: Path) -> dict[str, Any] | None:
    """The positions manifest (seed, books, mix) if `oneply train positions` wrote one."""
    file = positions.with_name(positions.name + ".manifest.json")
    try:
        manifest: dict[str, Any] = json.loads(file.read_text())
        return manifest
    except (OSError, ValueError):
        return None


def _remove_stale_temporaries(out: Path) -> None:
    for stale in out.glob(".chunk-*.*-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in out.glob(".manifest.json.tmp-*"):
        stale.unlink(missing_ok=True)


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "positions", type=Path, help="text file with one FEN per line, or a .pgn file of games"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory of shards")
    add_scoring_arguments(parser, str(DEV_PUZZLES))


def run(args: argparse.Namespace) -> int:
    job = scoring_job(args)
    if job.positions.suffix.lower() == ".pgn":  # games, not positions: streamed, deduplicated
        from oneply.training.data import pgn_annotate

        return pgn_annotate.run_as("annotate", job)
    errors = (AnnotateError, StockfishStartError)
    resume = "finished chunks are kept; rerun to resume"
    return run_interruptible("annotate", lambda: annotate_file(job), errors, resume)


def annotate_file(job: ScoringJob) -> int:
    """One run: the chunks of ``job.positions`` that ``job.shard`` takes and no valid shard in
    ``job.out`` holds yet, scored and written; the manifest rewritten before and after."""
    settings = Settings(job.stockfish, job.depth, job.nodes, job.chunk_size)
    lines = read_positions(job.positions)
    size = settings.chunk_size
    all_chunks = [
        Chunk(i, i * size, lines[i * size : (i + 1) * size])
        for i in range((len(lines) + size - 1) // size)
    ]
    k, n = job.shard
    mine = [c for c in all_chunks if c.index % n == k]
    job.out.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(job.out)
    todo = [c for c in mine if finished_entry(job.out, c, settings) is None]

    with StockfishScorer(settings.stockfish) as probe:
        version = probe.id.get("name", "unknown")
    header = {
        "format": "oneply-annotated-v1",
        "positions_file": str(job.positions),
        "stockfish": version,
        "limit": settings.limit_dict(),
        "multipv": "all legal moves",
        "chunk_size": size,
        "shard": f"{k}/{n}",
        "generator": _generator_settings(job.positions),
    }
    write_manifest(job.out, header, len(all_chunks))
    workers = min(job.workers, len(todo)) or 1
    print(
        f"{len(mine) - len(todo)} of {len(mine)} chunks already done; annotating {len(todo)} "
        f"with {version}, {settings.limit_dict()}, {workers} worker(s)"
    )
    total = sum(len(c.lines) for c in todo)
    started = time.monotonic()
    with tqdm(total=total, unit="pos", desc="annotate", smoothing=0.05) as bar:
        entries = annotate_chunks(todo, settings, version, job.out, workers, bar)
    seconds = time.monotonic() - started
    manifest = write_manifest(job.out, header, len(all_chunks))
    done = sum(e["count"] for e in entries)
    values = sum(e["action_values"] for e in entries)
    print(
        f"annotated {done} positions ({values} action values) in {seconds:.1f} s: "
        f"{done / max(seconds, 1e-9):.2f} positions/s, {values / max(seconds, 1e-9):.0f} values/s; "
        f"{job.out} now holds {manifest['positions']} positions"
    )
    return 0

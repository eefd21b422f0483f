"""The one loop of every source of scored positions (training/data/sources.py): a worker pool
scores games in order, the parent keeps each position's first occurrence and writes whole
games as shards.

A source supplies its games, nothing else:

* :func:`score_positions` — a source that knows its candidate positions (the games of a PGN
  file; next perhaps an EPD list or a Lichess database export) gives ``(game number, boards)``
  per game. A position already known (in DIR's shards, in an exclusion CSV, earlier in the
  run) never reaches Stockfish.
* :func:`play_games` — score-driven self-play (`train generate`): the workers play the games
  (training/data/scored_games.py) and find the positions themselves; the first occurrence of each
  is kept, up to the number wanted.

Both go through the same pool (training/data/score_workers.py: one Stockfish per worker, the same
scoring call and limit), the same writer (training/data/shard_writer.py's ``Writer``: compact shards
of whole games, resumable), the same progress bar and the same Stockfish-alone measurement.
Ctrl-C or SIGTERM writes the games collected so far, whole, and re-raises KeyboardInterrupt;
:data:`SourceRun.totals` holds the counts up to that moment.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.pool import AsyncResult

import chess
from tqdm import tqdm

from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.training.data.score_workers import init_worker, play, score_boards, stockfish_rate
from oneply.training.data.scored_games import Record
from oneply.training.data.shard_writer import Reservoir, Writer
from oneply.training.data.workers import worker_pool

#: (game number the writer records, worker function, its arguments)
Job = tuple[int, Callable[..., list[Record]], tuple[object, ...]]


@dataclass
class Totals:
    """What a run did: positions kept (``new``), positions scored, games collected, the
    seconds it took and Stockfish's own rate on a sample of its positions."""

    new: int = 0
    scored: int = 0
    games: int = 0
    seconds: float = 0.0
    bench: float | None = None


@dataclass
class SourceRun:
    """One run of a source, as the loop needs it."""

    writer: Writer
    #: keys of the positions never to keep (DIR's shards, the exclusion CSVs); the run adds
    #: every position it keeps
    known: set[bytes]
    workers: int
    #: :func:`oneply.training.data.score_workers.init_worker`'s arguments
    initargs: tuple[object, ...]
    #: a shard is written once this many positions wait (whole games, so about this many)
    shard_positions: int
    #: positions scored again by Stockfish alone at the end (0: skip the measurement)
    bench_sample: int
    #: the progress bar's label
    desc: str
    #: stop once this many new positions are kept (None: when the games run out)
    wanted: int | None = None
    totals: Totals = field(default_factory=Totals)


def score_positions(run: SourceRun, games: Iterable[tuple[int, Sequence[chess.Board]]]) -> Totals:
    """Score the positions of each ``(game number, boards)`` not yet known, in game order."""

    def jobs() -> Iterator[Job]:
        for number, boards in games:
            fens = [board.fen() for board in boards if _claim(run.known, board)]
            yield number, score_boards, (fens,)

    return _loop(run, jobs(), ahead=4 * run.workers + 1, claimed=True)


def play_games(run: SourceRun, first_game: int) -> Totals:
    """Play score-driven games from ``first_game`` on until ``run.wanted`` new positions are
    kept. Game g is the writer's game g and the players' game number k + n·g (``--shard
    K/N``), so every host plays its own games and a rerun continues where shards end."""
    k, n = run.writer.shard
    jobs = ((game, play, (k + n * game,)) for game in itertools.count(first_game))
    return _loop(run, jobs, ahead=2 * run.workers, claimed=False)


def _claim(known: set[bytes], board: chess.Board) -> bool:
    """True the first time a position is seen (it is then known)."""
    key = position_key(tokenize(board))
    if key in known:
        return False
    known.add(key)
    return True


def _loop(run: SourceRun, jobs: Iterator[Job], ahead: int, claimed: bool) -> Totals:
    """Results in game order with at most ``ahead`` games in flight; ``claimed``: the jobs'
    positions were deduplicated before scoring, so every record is new."""
    writer, totals = run.writer, run.totals
    wanted = run.wanted
    sample = Reservoir(run.bench_sample)  # for the Stockfish-alone measurement
    bar = tqdm(total=wanted, unit="pos", desc=run.desc, dynamic_ncols=True, smoothing=0.05)
    started = time.monotonic()
    try:
        with worker_pool(run.workers, init_worker, run.initargs, start_method="fork") as pool:
            pending: deque[tuple[int, AsyncResult[list[Record]]]] = deque()
            while wanted is None or totals.new < wanted:
                while len(pending) < ahead and (job := next(jobs, None)) is not None:
                    number, function, arguments = job
                    pending.append((number, pool.apply_async(function, arguments)))
                if not pending:
                    break
                number, result = pending.popleft()
                records: list[Record] = result.get()
                totals.scored += len(records)
                fresh = records if claimed else _first(records, run.known, wanted, totals.new)
                writer.add(number, fresh)
                totals.new += len(fresh)
                sample.add([r.fen for r in fresh])
                bar.update(len(fresh))
                if not claimed:
                    share = totals.new / max(totals.scored, 1)
                    bar.set_postfix_str(f"new {share:.0%} of scored", refresh=False)
                done = wanted is not None and totals.new >= wanted
                if len(writer.records) >= run.shard_positions or done:
                    writer.flush_added()
        writer.flush_added()
        totals.seconds = time.monotonic() - started
        bar.close()
        totals.bench = stockfish_rate(run.workers, run.initargs, sample.fens)
    except KeyboardInterrupt:
        writer.flush_added()  # the games collected so far, whole: nothing half-done is kept
        raise
    finally:
        bar.close()
        totals.games = writer.games
    return totals


def _first(records: list[Record], known: set[bytes], wanted: int | None, new: int) -> list[Record]:
    """The records not known yet (which become known), no more than ``wanted - new``."""
    room = None if wanted is None else wanted - new
    fresh: list[Record] = []
    for record in records:
        if record.key not in known and (room is None or len(fresh) < room):
            known.add(record.key)
            fresh.append(record)
    return fresh

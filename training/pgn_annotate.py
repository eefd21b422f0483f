"""`oneply train pgn GAMES.pgn` (also `oneply train annotate GAMES.pgn`): score the unique
positions of the games of a PGN file, a source of training/sources.py.

The paper's approach for anyone with a game database: every position of every game (before
each move, and the final one if it has legal moves) is a candidate; the first occurrence in
file order is scored with all its legal moves (training/stockfish_scorer.py, a fresh
Stockfish game per position), unless a shard in DIR or an exclusion CSV already has it.

* The file is streamed: games are read one at a time, so its size does not matter.
* Shards (compact, training/compact.py) hold whole games: ``games: [first, end)`` in their
  meta.json. A rerun (after SIGKILL, or on a grown file) skips the games already done and
  continues; nothing is lost or duplicated, and the values are the same.
* ``--shard K/N`` takes games g % N == K, so N hosts can split one file, one directory each.
* Games of other variants (a ``Variant`` header other than standard) are skipped; a game
  with an illegal move contributes the positions before it.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.pgn
from tqdm import tqdm

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.tokenizer import position_key, tokenize
from oneply.training.dataset import puzzle_keys
from oneply.training.score_workers import init_worker, score_boards, stockfish_rate
from oneply.training.scored_games import GameSettings
from oneply.training.shard_writer import (
    Reservoir,
    SourceError,
    Writer,
    existing,
    write_manifest,
)
from oneply.training.sources import (
    DEFAULT_DEPTH,
    add_scoring_arguments,
    rate_fields,
    run_source,
)
from oneply.training.workers import worker_pool

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


def read_games(path: Path, first: int, shard: tuple[int, int]) -> Iterator[tuple[int, list]]:
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


def run_pgn(args: argparse.Namespace, depth: int | None) -> dict:
    out: Path = args.out
    if not args.positions.is_file():
        raise SourceError(f"{args.positions}: PGN file not found")
    out.mkdir(parents=True, exist_ok=True)
    settings = GameSettings(depth=None if args.nodes else depth, nodes=args.nodes)
    k, n = args.shard
    source = {"pgn": args.positions.name, "limit": {"depth": settings.depth, "nodes": args.nodes}}
    keys, first_game = existing(out, f"{k}/{n}", match={"source": source})
    have = len(keys)
    known = keys | puzzle_keys(args.exclude)
    initargs: tuple = (settings, args.stockfish, [], [], os.getpid())
    writer = Writer(out, (k, n), {"source": source}, SHARD_PREFIX)
    new, started = 0, time.monotonic()
    sample = Reservoir(args.bench_sample)
    bar = tqdm(unit="pos", desc="annotate", dynamic_ncols=True, smoothing=0.05)
    try:
        with worker_pool(args.workers, init_worker, initargs, start_method="fork") as pool:
            pending: deque = deque()
            for number, boards in read_games(args.positions, first_game, (k, n)):
                fens = [b.fen() for b in _unknown(boards, known)]
                pending.append((number, pool.apply_async(score_boards, (fens,))))
                while len(pending) > 4 * args.workers:
                    new += _collect(pending.popleft(), writer, bar, sample)
                if len(writer.records) >= args.chunk_size:
                    writer.flush_added()
            while pending:
                new += _collect(pending.popleft(), writer, bar, sample)
        writer.flush_added()
        seconds = time.monotonic() - started
        bar.close()
        bench = stockfish_rate(args.workers, initargs, sample.fens)
    except KeyboardInterrupt:
        writer.flush_added()  # the games scored so far, whole
        raise
    finally:
        bar.close()
    manifest = {"format": "oneply-pgn-annotate-v1", "source": source, "exclude": args.exclude}
    write_manifest(out, {**manifest, "positions": have + new})
    return {
        "positions": have + new,
        "new": new,
        "games": writer.games,
        **rate_fields(out, have + new, new, seconds, bench),
    }


def _unknown(boards: list[chess.Board], known: set[bytes]) -> list[chess.Board]:
    """The boards not in ``known`` (first occurrences), which are added to it."""
    fresh = []
    for board in boards:
        key = position_key(tokenize(board))
        if key not in known:
            known.add(key)
            fresh.append(board)
    return fresh


def _collect(item: tuple, writer: Writer, bar: tqdm, sample: Reservoir) -> int:
    number, result = item
    records = result.get()
    writer.add(number, records)
    bar.update(len(records))
    sample.add([r.fen for r in records])
    return len(records)


def collect(args: argparse.Namespace) -> dict:
    """One run of the source (see training/sources.py)."""
    return run_pgn(args, args.depth if args.depth or args.nodes else DEFAULT_DEPTH)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("positions", type=Path, metavar="GAMES.pgn", help="a PGN file of games")
    parser.add_argument("--out", type=Path, required=True, help="output directory of shards")
    add_scoring_arguments(parser, str(DEV_PUZZLES))


def run_as(name: str, args: argparse.Namespace) -> int:
    """The source as `oneply train NAME` (``pgn``, or ``annotate`` given a .pgn file)."""
    return run_source(name, collect, args)


def run(args: argparse.Namespace) -> int:
    return run_as("pgn", args)

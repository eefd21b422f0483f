"""The worker side of scoring positions with Stockfish in a pool, shared by every source.

Each worker (forked by training/data/workers.py's pool) starts one Stockfish and one
:class:`~oneply.training.data.scored_games.GamePlayer` (a
:class:`~oneply.training.data.best_games.BestGamePlayer` for ``generate --labels best``), then
either plays score-driven games (`train generate`) or scores given positions (PGN annotation)
with the same scoring call and limit. :func:`stockfish_rate` measures Stockfish alone on a
sample of a run's positions, so a run can report its own overhead.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from typing import Any

import chess
import chess.polyglot

from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.training.data.best_games import BestGamePlayer
from oneply.training.data.learner import model_learner
from oneply.training.data.scored_games import GamePlayer, GameSettings, Record
from oneply.training.data.stockfish_scorer import StockfishScorer
from oneply.training.data.workers import worker_pool

#: this worker process's Stockfish and player, set by :func:`init_worker`
_worker: dict[str, Any] = {}


def _alive() -> None:
    if os.getppid() != _worker["parent"]:  # the run is gone: stop mid-game (backs up PDEATHSIG)
        os._exit(1)


def init_worker(
    settings: GameSettings,
    stockfish: str,
    books: Sequence[str],
    eco: list[list[str]],
    parent: int,
    labels: str = "all",
    learner: str | None = None,
) -> None:
    """``labels``: ``all`` scores every legal move, ``best`` only the best move
    (training/data/best_games.py); ``learner``: a model file that plays one side of a share of
    the games (training/data/learner.py), loaded once per worker."""
    engine = StockfishScorer(stockfish)
    readers = [chess.polyglot.open_reader(p) for p in books]
    kind = BestGamePlayer if labels == "best" else GamePlayer
    plays = model_learner(learner) if learner else None
    player = kind(settings, engine, readers, eco, alive=_alive, learner=plays)
    _worker.update(player=player, parent=parent)


def play(game_number: int) -> list[Record]:
    """Worker: one score-driven game's scored positions."""
    return list(_worker["player"].play(game_number))


def score_boards(fens: list[str]) -> list[Record]:
    """Worker: the values of some positions (the same Stockfish and settings as the games)."""
    player = _worker["player"]
    records = []
    for fen in fens:
        board = chess.Board(fen)
        state = tokenize(board)
        records.append(Record(position_key(state), fen, state.astype("uint8"), player.score(board)))
    return records


def _wait_for_all(_: int) -> None:
    _worker["barrier"].wait(timeout=60)


def _score_fen(fen: str) -> int:
    """Stockfish alone on one position: the same scoring call as the games, no game logic."""
    player: GamePlayer = _worker["player"]
    player.bench(chess.Board(fen))
    return 1


def stockfish_rate(workers: int, initargs: tuple[object, ...], fens: list[str]) -> float | None:
    """Positions/s of as many workers scoring a sample of the run's positions, nothing else.

    A fresh pool, so that no game of the run is still being played beside the measurement;
    the clock starts once every worker has started its Stockfish (a barrier).
    """
    if not fens:
        return None
    _worker["barrier"] = mp.get_context("fork").Barrier(workers)  # inherited by the fork
    with worker_pool(workers, init_worker, initargs, start_method="fork") as pool:
        pool.map(_wait_for_all, range(workers), chunksize=1)
        started = time.monotonic()
        done = sum(pool.imap_unordered(_score_fen, fens, chunksize=2))
        return round(done / max(time.monotonic() - started, 1e-9), 1)

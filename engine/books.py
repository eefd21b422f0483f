"""Polyglot books and Syzygy tables: the one weighted walk through a book and the one way to
open tablebases, for every package that plays from them (the bot's book and tables, the
arena's openings and adjudication, the data engine's games). They live in the engine, the
package the bot and the arena both build on, so neither imports the other."""

from __future__ import annotations

import random
from typing import Any

import chess
import chess.polyglot


def weighted_walk(
    board: chess.Board,
    book: chess.polyglot.MemoryMappedReader,
    rng: random.Random,
    plies: int,
    prior: int = 0,
) -> None:
    """Push up to ``plies`` book moves onto ``board``, each drawn with probability ∝ its
    weight + ``prior`` (a prior of 1 gives a book's zero-weight moves a chance); the walk ends
    where the book has no (weighted) move. One ``rng.choices`` draw per ply, so a seeded walk
    is the same walk on every run."""
    for _ in range(plies):
        entries = list(book.find_all(board))
        weights = [entry.weight + prior for entry in entries]
        if not sum(weights):
            return
        board.push(rng.choices(entries, weights)[0].move)


def open_tablebase(path: str | None) -> Any:
    """The Syzygy tables in ``path`` (python-chess's prober), or None without a path."""
    if not path:
        return None
    import chess.syzygy

    return chess.syzygy.open_tablebase(path)

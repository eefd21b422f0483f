"""Polyglot books and Syzygy tables: the one weighted walk through a book and the one way to
open tablebases, for every package that plays from them (the bot's book and tables, the
arena's openings and adjudication, the data engine's games). They live in the engine, the
package the bot and the arena both build on, so neither imports the other."""

from __future__ import annotations

import os
import random

import chess
import chess.polyglot
import chess.syzygy


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


def open_tablebase(path: str | None) -> chess.syzygy.Tablebase | None:
    """The Syzygy tables in ``path`` (python-chess's prober; ``path`` may hold several
    directories separated by ``os.pathsep``, as Stockfish's SyzygyPath), or None without a
    path. A directory that does not exist raises FileNotFoundError."""
    if not path:
        return None
    first, *others = path.split(os.pathsep)
    for directory in (first, *others):
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"no Syzygy directory {directory!r}")
    tables = chess.syzygy.open_tablebase(first)
    for directory in others:
        tables.add_directory(directory)
    return tables


def tablebase_value(
    tables: chess.syzygy.Tablebase | None, board: chess.Board, max_pieces: int
) -> float | None:
    """The tables' verdict on ``board`` as a win probability for the side to move (1 won,
    0.5 drawn — cursed wins and blessed losses too, as the fifty-move rule makes them —,
    0 lost), or None when the tables do not cover it (castling rights, more than
    ``max_pieces`` pieces, a table that is missing)."""
    if tables is None or board.castling_rights or chess.popcount(board.occupied) > max_pieces:
        return None
    try:
        wdl = tables.probe_wdl(board)
    except (KeyError, chess.syzygy.MissingTableError):
        return None
    return 1.0 if wdl > 1 else 0.0 if wdl < -1 else 0.5

"""Openings for paired games: random walks through a polyglot book, EPD or PGN files.

The walk through a book is engine/play/books.py's ``weighted_walk``, the one the bot, the policy
play-outs and the data engine's games (training/data/openings.py) take too.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from oneply.arena.settings import DEFAULT_BOOK, DEFAULT_BOOK_PLIES, Opening
from oneply.engine.play.books import weighted_walk


def load_openings(
    path: str | None, pairs: int, plies: int | None, seed: int, order: str = "random"
) -> list[Opening]:
    """Openings for ``pairs`` game pairs from a polyglot book, an EPD or a PGN file."""
    if path is None:
        path = DEFAULT_BOOK if os.path.exists(DEFAULT_BOOK) else None
    if path is None:
        return [Opening()]
    rng = random.Random(seed)
    suffix = Path(path).suffix.lower()
    if suffix == ".bin":
        openings = book_openings(path, pairs, plies or DEFAULT_BOOK_PLIES, rng)
    elif suffix == ".epd":
        openings = epd_openings(path)
    elif suffix == ".pgn":
        openings = pgn_openings(path, plies)
    else:
        raise ValueError(f"unknown openings format {suffix!r}: use .bin, .epd or .pgn")
    if not openings:
        raise ValueError(f"no openings found in {path}")
    if order == "random" and suffix != ".bin":
        rng.shuffle(openings)
    return openings


def book_openings(path: str, pairs: int, plies: int, rng: random.Random) -> list[Opening]:
    """Distinct weighted random walks of ``plies`` moves through a polyglot book."""
    found: dict[str, Opening] = {}
    with chess.polyglot.open_reader(path) as reader:
        for _ in range(max(pairs, 1) * 20):
            board = chess.Board()
            weighted_walk(board, reader, rng, plies)
            if board.move_stack and not board.is_game_over():
                key = board.epd()
                found.setdefault(key, Opening(moves=tuple(m.uci() for m in board.move_stack)))
            if len(found) >= pairs:
                break
    return list(found.values())


def epd_openings(path: str) -> list[Opening]:
    openings = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        board, ops = chess.Board.from_epd(line)
        ident = ops.get("id")
        name = ident if isinstance(ident, str) else None
        openings.append(Opening(fen=board.fen(), name=name))
    return openings


def pgn_openings(path: str, plies: int | None) -> list[Opening]:
    """Each game's start position and its first ``plies`` mainline moves (all if None)."""
    openings = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            moves = [m.uci() for m in game.mainline_moves()][:plies]
            root = game.board()
            fen = None if root.fen() == chess.STARTING_FEN else root.fen()
            name = ", ".join(
                game.headers[k] for k in ("ECO", "Opening", "Variation") if k in game.headers
            )
            if moves or fen:
                openings.append(Opening(fen=fen, moves=tuple(moves), name=name or None))
    return openings

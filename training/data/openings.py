"""Where the data engine's games start and when they are over, shared by `train positions`
(Stockfish self-play) and `train generate` (score-driven games).

Openings come from the Debian polyglot books (a weighted random walk), a prefix of an ECO main
line, or a few random moves, so that the positions that follow are diverse from the first ply.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot

from oneply.engine.play.books import weighted_walk

DEFAULT_ECO = Path("/usr/share/pgn-extract/eco.pgn")


class OpeningsError(RuntimeError):
    """An opening book or ECO file that cannot be read."""


def load_eco_lines(path: Path | None) -> list[list[str]]:
    """Main lines of the ECO file as UCI move lists."""
    if path is None:
        return []
    lines = []
    try:
        with open(path) as file:
            while (game := chess.pgn.read_game(file)) is not None:
                moves = [m.uci() for m in game.mainline_moves()]
                if moves:
                    lines.append(moves)
    except OSError as error:
        raise OpeningsError(f"{path}: cannot read ECO file: {error}") from None
    return lines


def check_books(paths: Iterable[str]) -> None:
    for path in paths:
        if not Path(path).is_file():
            raise OpeningsError(f"{path}: polyglot book not found (not a file)")
        try:
            with chess.polyglot.open_reader(path) as reader:
                next(iter(reader.find_all(chess.Board())), None)
        except (OSError, ValueError) as error:
            raise OpeningsError(f"{path}: not a readable polyglot book: {error}") from None


def play_opening(
    board: chess.Board,
    rng: random.Random,
    books: list[chess.polyglot.MemoryMappedReader],
    eco_lines: list[list[str]],
    book_share: float,
    eco_share: float,
) -> str:
    """Push an opening onto ``board`` and return its kind: a weighted random walk of 1–24 plies
    through a polyglot book, a random prefix (at least half) of an ECO line, or 1–4 random moves.
    """
    roll = rng.random()
    if roll < book_share and books:
        book = rng.choice(books)
        weighted_walk(board, book, rng, rng.randint(1, 24), prior=1)
        return "book"
    if roll < book_share + eco_share and eco_lines:
        line = rng.choice(eco_lines)
        for uci in line[: rng.randint(max(1, len(line) // 2), len(line))]:
            board.push_uci(uci)
        return "eco"
    for _ in range(rng.randint(1, 4)):
        board.push(rng.choice(list(board.legal_moves)))
    return "random"


def game_finished(board: chess.Board) -> bool:
    """Over, or claimable as a draw (fifty moves, threefold): no more positions to take."""
    return board.is_game_over() or board.can_claim_fifty_moves() or board.is_repetition(3)

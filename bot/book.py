"""Moves the bot takes from files before asking the model: a polyglot opening book and Syzygy
endgame tablebases (config.yml `engine.polyglot` and `engine.syzygy`, lichess-bot's names).

The book step is the project's one weighted walk through a polyglot book
(engine/play/books.weighted_walk, one ply), and the tables open through engine/play/books'
open_tablebase, as the matches' adjudication does. Each move says which rule chose it
(`book`, `tablebase_win`, `tablebase_draw`, `tablebase_loss`), and bot/game.py logs it as the
move's `rule=`.

Tablebases: with no castling rights and at most `max_pieces` pieces, every legal move is
probed (WDL and DTZ of the position it leads to). Winning: the winning move with the shortest
distance to a zeroing move (mate counts as 0). Drawn: only the moves that keep the draw, and
the model picks among them. Lost: the move that resists longest. A missing table leaves the
move to the model.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import chess
import chess.polyglot
import chess.syzygy

from oneply.bot.config import EngineConfig
from oneply.engine.play.books import open_tablebase, weighted_walk

log = logging.getLogger("oneply.bot")


@dataclass(frozen=True)
class FileMove:
    """A move from the book or the tables, or (`allowed`) the moves the model may choose from."""

    rule: str
    move: chess.Move | None = None
    allowed: tuple[chess.Move, ...] = ()


class BookAndTables:
    def __init__(self, config: EngineConfig, rng: random.Random | None = None) -> None:
        self.polyglot = config.polyglot
        self.syzygy = config.syzygy
        self.rng = rng or random.Random()
        self.books: list[chess.polyglot.MemoryMappedReader] = []
        self.tablebase: chess.syzygy.Tablebase | None = None
        if self.polyglot.enabled:
            self.books = [chess.polyglot.open_reader(path) for path in self.polyglot.book]
        if self.syzygy.enabled:
            first, *others = self.syzygy.paths
            tables = open_tablebase(first)
            for path in others:
                if tables is not None:
                    tables.add_directory(path)
            self.tablebase = tables

    def describe(self) -> str:
        parts = []
        if self.books:
            parts.append(f"book={self.polyglot.selection}:{len(self.books)}")
        if self.tablebase is not None:
            parts.append(f"syzygy<={self.syzygy.max_pieces}")
        return ",".join(parts) or "none"

    def choose(self, board: chess.Board) -> FileMove | None:
        """A book or tablebase decision for `board`, or None: the model decides alone."""
        try:
            return self.book_move(board) or self.table_move(board)
        except (OSError, ValueError, KeyError, IndexError) as error:  # a corrupt file: model
            log.warning("event=book_failed fen=%s error=%r", board.fen(), error)
            return None

    def book_move(self, board: chess.Board) -> FileMove | None:
        if not self.books or len(board.move_stack) >= self.polyglot.max_depth:
            return None
        for book in self.books:
            entries = [entry for entry in book.find_all(board) if entry.weight > 0]
            if not entries:
                continue
            if self.polyglot.selection == "best_move":
                return FileMove("book", max(entries, key=lambda entry: entry.weight).move)
            if self.polyglot.selection == "uniform_random":
                return FileMove("book", self.rng.choice(entries).move)
            walk = board.copy(stack=False)
            weighted_walk(walk, book, self.rng, 1)
            return FileMove("book", walk.peek())
        return None

    def table_move(self, board: chess.Board) -> FileMove | None:
        tables = self.tablebase
        pieces = chess.popcount(board.occupied)
        if tables is None or board.castling_rights or pieces > self.syzygy.max_pieces:
            return None
        outcomes = []  # (our WDL after the move, the opponent's DTZ after it, move)
        for move in board.legal_moves:
            board.push(move)
            try:
                outcomes.append((-tables.probe_wdl(board), tables.probe_dtz(board), move))
            except (KeyError, chess.syzygy.MissingTableError):
                return None
            finally:
                board.pop()
        if not outcomes:
            return None
        best = max(wdl for wdl, _, _ in outcomes)
        keep = [(dtz, move) for wdl, dtz, move in outcomes if wdl == best]
        if best > 0:  # the opponent's DTZ is negative: nearest to 0 is quickest
            return FileMove("tablebase_win", max(keep, key=lambda item: item[0])[1])
        if best < 0:
            return FileMove("tablebase_loss", max(keep, key=lambda item: item[0])[1])
        return FileMove("tablebase_draw", allowed=tuple(move for _, move in keep))

    def close(self) -> None:
        for book in self.books:
            book.close()
        if self.tablebase is not None:
            self.tablebase.close()

"""What a match is: time controls, engine specs, openings and the match settings.

Plain data, shared by the runner, the `match` and `ladder` CLIs and the tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot

#: the polyglot books Debian packages (gnuchess-book, pychess): the one place they are named
DEBIAN_BOOKS = (
    Path("/usr/share/games/gnuchess/book.bin"),
    Path("/usr/share/pychess/pychess_book.bin"),
)
#: the matches' and play-outs' book (the data engine's games use every book that exists)
DEFAULT_BOOK = str(DEBIAN_BOOKS[0])
#: plies of a random book walk when --plies is not given
DEFAULT_BOOK_PLIES = 8
#: what a mate score counts as, in centipawns, for adjudication
MATE_CP = 100_000

# PGN Termination tag values (cutechess-compatible wording)
TERM_NORMAL = "normal"
TERM_ADJUDICATION = "adjudication"
TERM_TIME = "time forfeit"
TERM_ILLEGAL = "illegal move"
TERM_ABANDONED = "abandoned"
TERM_UNTERMINATED = "unterminated"


@dataclass(frozen=True)
class TimeControl:
    """How long an engine may think: clock (base+inc), fixed movetime, and/or a node budget."""

    base: float | None = None
    inc: float = 0.0
    movetime: float | None = None
    nodes: int | None = None

    @property
    def has_clock(self) -> bool:
        return self.base is not None

    def pgn_tag(self) -> str:
        """PGN TimeControl tag: "10+0.1" (clock), "1/0.5" (0.5 s per move), "-" (nodes only)."""
        if self.base is not None:
            return f"{self.base:g}+{self.inc:g}"
        if self.movetime is not None:
            return f"1/{self.movetime:g}"
        return "-"

    def describe(self) -> str:
        parts = []
        if self.base is not None:
            parts.append(f"tc={self.base:g}+{self.inc:g}")
        if self.movetime is not None:
            parts.append(f"movetime={self.movetime * 1000:g}ms")
        if self.nodes is not None:
            parts.append(f"nodes={self.nodes}")
        return " ".join(parts) or "unlimited"


@dataclass(frozen=True)
class EngineSpec:
    """A UCI engine as the user gave it: command line, UCI options and its time control."""

    command: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()
    tc: TimeControl = TimeControl(base=10.0, inc=0.1)
    name: str | None = None

    def label(self) -> str:
        return self.name or Path(self.command[0]).name


@dataclass(frozen=True)
class Opening:
    """A start position plus the book moves played from it (in UCI)."""

    fen: str | None = None
    moves: tuple[str, ...] = ()
    name: str | None = None

    def root(self) -> chess.Board:
        return chess.Board(self.fen) if self.fen else chess.Board()

    def board(self) -> chess.Board:
        board = self.root()
        for uci in self.moves:
            board.push_uci(uci)
        return board


@dataclass
class MatchSettings:
    """Everything one match needs; built from the CLI or by `oneply ladder`."""

    engine_a: EngineSpec
    engine_b: EngineSpec
    games: int = 10
    openings: list[Opening] = field(default_factory=lambda: [Opening()])
    concurrency: int = os.cpu_count() or 1
    timemargin: float = 0.1
    move_timeout: float = 60.0
    startup_timeout: float = 30.0
    adjudicator: str | None = ""  # Stockfish path or name; "" = look for it, None = off
    adjudicate_nodes: int = 50_000
    resign_score: int = 1000
    resign_moves: int = 3
    syzygy: str | None = None
    sprt: tuple[float, float, float, float] | None = None
    pgn_path: str | None = None
    event: str = "oneply match"
    progress: bool = True

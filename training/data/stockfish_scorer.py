"""Stockfish scores every legal move of a position, over its UCI pipe.

The data engine's hot path (`train generate`, `train annotate`, PGN annotation) asks one
question millions of times: the win probability of each legal move. python-chess's engine
client answers it correctly but parses every `info` line of every depth into objects on an
event-loop thread; at the shallow depths the data engine uses that costs more than Stockfish's
search (measured: 99 positions/s through python-chess, 198 through this pipe, same 300
positions at depth 3, identical values). This class talks UCI itself and reads only what the
values need: the last `multipv k … score … pv m` line of each k.

What a value is (docs/FORMAT.md §3):

* a move's value is ``cp_to_win(cp)`` of its root MultiPV line, which Stockfish reports from
  the mover's side; a mate for the mover is 1.0, being mated 0.0;
* moves that checkmate (1.0) or stalemate (0.5) are settled without the engine;
* a move Stockfish returns no line for is scored by searching the child position with the
  same limit and flipping: 1 − p(child).

Every position is searched in a fresh Stockfish game (``ucinewgame`` clears the hash and
history), and without the moves that led to it, so its values depend on the position and the
limit alone: not on the worker count, on what a worker searched before, or on where a killed
run was resumed.
"""

from __future__ import annotations

from collections.abc import Collection
from types import TracebackType

import chess
import chess.engine

from oneply.engine.model.values import score_to_win
from oneply.engine.stockfish import StockfishError, UciPipe

HASH_MB = 16


def settle_without_engine(board: chess.Board, move: chess.Move) -> float | None:
    """1.0 for a mating move, 0.5 for a stalemating one, None when the engine must decide."""
    board.push(move)
    try:
        if board.is_checkmate():
            return 1.0
        if board.is_stalemate():
            return 0.5
        return None
    finally:
        board.pop()


def settled_and_searched(board: chess.Board) -> tuple[dict[chess.Move, float], list[chess.Move]]:
    """The legal moves split into those settled without the engine (with their values) and
    those Stockfish must score, in legal-move order: the one rule of both the scorer and the
    tests' independent reference."""
    values: dict[chess.Move, float] = {}
    searched: list[chess.Move] = []
    for move in board.legal_moves:
        settled = settle_without_engine(board, move)
        if settled is None:
            searched.append(move)
        else:
            values[move] = settled
    return values, searched


def go_command(limit: chess.engine.Limit) -> str:
    """`go depth D` or `go nodes N` (the data engine's two limits)."""
    if limit.nodes is not None:
        return f"go nodes {limit.nodes}"
    if limit.depth is not None:
        return f"go depth {limit.depth}"
    raise ValueError("a Stockfish limit needs depth or nodes")


def parse_line(line: str) -> tuple[int, chess.engine.Score, str] | None:
    """(multipv index, score for the mover, first pv move) of an `info` line, or None for a
    line without all three (currmove, hashfull, string …)."""
    parts = line.split()
    try:
        k = int(parts[parts.index("multipv") + 1]) if "multipv" in parts else 1
        at = parts.index("score")
        kind, value = parts[at + 1], int(parts[at + 2])
        first = parts[parts.index("pv") + 1]
    except (ValueError, IndexError):
        return None
    score = chess.engine.Cp(value) if kind == "cp" else chess.engine.Mate(value)
    return k, score, first


class StockfishScorer:
    """One single-threaded Stockfish process that scores all legal moves of positions.

    It is started and stopped by engine/stockfish.py's :class:`UciPipe` (the one start, the
    one "Stockfish did not start: …"); what is its own is the search and the parsing."""

    def __init__(self, path: str | None = None, hash_mb: int = HASH_MB):
        self.pipe = UciPipe(path, {"Threads": 1, "Hash": hash_mb})
        self.process = self.pipe.process
        self.id = self.pipe.id
        self.multipv = 1
        self._send = self.pipe.send
        self._lines_until = self.pipe.lines_until

    def _search(
        self, board: chess.Board, limit: chess.engine.Limit, moves: list[chess.Move]
    ) -> Collection[tuple[chess.engine.Score, str]]:
        """Last (score, first move) of each MultiPV line of one search from a fresh game."""
        multipv = max(1, len(moves))
        if multipv != self.multipv:
            self._send(f"setoption name MultiPV value {multipv}")
            self.multipv = multipv
        self._send("ucinewgame")
        self._send(f"position fen {board.fen()}")
        searchmoves = " searchmoves " + " ".join(m.uci() for m in moves) if moves else ""
        self._send(go_command(limit) + searchmoves)
        lines: dict[int, tuple[chess.engine.Score, str]] = {}
        for line in self._lines_until("bestmove"):
            parsed = parse_line(line) if line.startswith("info") else None
            if parsed is not None:
                lines[parsed[0]] = parsed[1:]
        return lines.values()

    # -- the values ---------------------------------------------------------------------------

    def score_moves(self, board: chess.Board, limit: chess.engine.Limit) -> dict[chess.Move, float]:
        """Win probability (for the mover) of every legal move of ``board``."""
        values, searched = settled_and_searched(board)
        if not searched:
            return values
        for score, first in self._search(board, limit, searched):
            move = chess.Move.from_uci(first)
            if move in searched and move not in values:
                values[move] = score_to_win(score)
        for move in searched:
            if move not in values:  # Stockfish skipped it: search the child and flip
                child = board.copy(stack=False)
                child.push(move)
                reply = list(self._search(child, limit, []))
                if not reply:
                    raise StockfishError(f"no score for {child.fen()}")
                values[move] = 1.0 - score_to_win(reply[-1][0])
        return values

    def score_best(
        self, board: chess.Board, limit: chess.engine.Limit
    ) -> tuple[chess.Move, float] | None:
        """The cheap label (what the sv and bc predictors need): ``board``'s best move and its
        win probability for the mover, from ONE search without MultiPV, the settled moves
        (mate 1.0, stalemate 0.5) beside it as in :meth:`score_moves`. None without a legal
        move. Ties go to the legal-move order's first, as the best of :meth:`score_moves`."""
        values, searched = settled_and_searched(board)
        if searched and max(values.values(), default=0.0) < 1.0:
            restricted = searched if values else []  # all legal moves: no searchmoves
            lines = list(self._search(board, limit, restricted))
            if not lines:
                raise StockfishError(f"no score for {board.fen()}")
            score, first = lines[0]
            values[chess.Move.from_uci(first)] = score_to_win(score)
        if not values:
            return None
        order = {move: i for i, move in enumerate(board.legal_moves)}
        best = max(values, key=lambda m: (values[m], -order[m]))
        return best, values[best]

    # -- life ---------------------------------------------------------------------------------

    def quit(self) -> None:
        self.pipe.quit()

    def __enter__(self) -> StockfishScorer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.quit()

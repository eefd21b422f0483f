"""Lichess puzzles: the dev set, reading, solving with any ``MoveScorer``, scoring by band.

The one puzzle checker of the project: ``oneply eval``, the strength suite, the policy
play-outs and training's validation puzzle check all call it, so "solved" means the same
everywhere. The FEN is before the opponent's move and the first move of ``Moves`` is the
opponent's; the engine must then find every one of its moves in the line, the opponent's
replies coming from the line. A move that checkmates is always correct (and ends the puzzle).

It lives in the arena (not in training) because the arena needs it without torch, and
training may import the arena but never the other way round.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import numpy as np
from tqdm import tqdm

if TYPE_CHECKING:  # onnxruntime stays unimported for callers that only want DEV_PUZZLES
    from oneply.engine.play.inference import MoveScore, MoveScorer

#: 1,000 Lichess puzzles (evaluation only: training excludes every position on their lines)
DEV_PUZZLES = Path(__file__).resolve().parent / "data" / "puzzles-dev.csv"

#: rating bands of the per-band report, [low, high)
BANDS = ((0, 1000), (1000, 1500), (1500, 2000), (2000, 2500), (2500, 10_000))


@dataclass
class Puzzle:
    id: str
    fen: str
    moves: list[str]
    rating: int
    themes: list[str] = field(default_factory=list)


def read_puzzles(path: Path, limit: int | None = None) -> list[Puzzle]:
    """Lichess puzzle CSV rows (PuzzleId, FEN, Moves, Rating, ...).

    With a limit, an evenly spaced subset of the file: puzzle files are often sorted by
    rating, and the first N would all be easy ones.
    """
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    if limit is not None and limit < len(rows):
        rows = [rows[i] for i in np.linspace(0, len(rows) - 1, limit).round().astype(int)]
    return [
        Puzzle(
            r["PuzzleId"],
            r["FEN"],
            r["Moves"].split(),
            int(r["Rating"]),
            r.get("Themes", "").split(),
        )
        for r in rows
    ]


class PuzzleRun:
    """One puzzle being solved: the board, where we are in the line, and the verdict."""

    def __init__(self, puzzle: Puzzle):
        self.puzzle = puzzle
        self.board = chess.Board(puzzle.fen)
        self.board.push_uci(puzzle.moves[0])  # the opponent's move sets the puzzle
        self.index = 1  # the next move in the line, always one of ours
        self.solved: bool | None = None

    def play(self, move: chess.Move) -> None:
        """Our move: right if it is the line's move or checkmates; then the opponent replies."""
        expected = chess.Move.from_uci(self.puzzle.moves[self.index])
        self.board.push(move)
        if self.board.is_checkmate():
            self.solved = True
        elif move != expected:
            self.solved = False
        elif self.index + 1 >= len(self.puzzle.moves):
            self.solved = True
        else:
            self.board.push_uci(self.puzzle.moves[self.index + 1])
            self.index += 2


#: how the engine picks its move from the scored legal moves (best first) of a board
Chooser = Callable[[chess.Board, "list[MoveScore]"], chess.Move]


def argmax_choice(board: chess.Board, scores: list[MoveScore]) -> chess.Move:
    return scores[0].move


def solve_puzzles(
    scorer: MoveScorer,
    puzzles: list[Puzzle],
    batch: int = 64,
    progress: bool = True,
    choose: Chooser = argmax_choice,
) -> list[bool]:
    """Whether the engine solves each puzzle, picking moves with ``choose`` (plain argmax by
    default; the strength suite passes the full move policy); all open puzzles of a chunk are
    scored in one call per move. Any MoveScorer will do (training checks its torch model)."""
    results: list[bool] = []
    chunks = range(0, len(puzzles), batch)
    for start in tqdm(chunks, desc="puzzles", unit="batch", leave=False, disable=not progress):
        runs = [PuzzleRun(p) for p in puzzles[start : start + batch]]
        while open_runs := [r for r in runs if r.solved is None]:
            for run_, scores in zip(
                open_runs, scorer.score_many([r.board for r in open_runs]), strict=True
            ):
                run_.play(choose(run_.board, scores))
        results.extend(bool(r.solved) for r in runs)
    return results


class RememberingScorer:
    """A MoveScorer that scores each position (with its history) once and remembers it.

    Why: the suite solves every puzzle twice, by plain argmax and by the full policy, and the
    two passes mostly walk the same lines; with look-ahead each position costs hundreds of
    network calls, so the policy pass would repeat the argmax pass's searches for nothing
    (and, since the search keeps its tree between calls, not even exactly). Remembered, both
    passes rank the same positions the same way and only new positions are searched."""

    def __init__(self, scorer: MoveScorer) -> None:
        self.scorer = scorer
        self.memory: dict[tuple[str, tuple[str, ...]], list[MoveScore]] = {}

    @staticmethod
    def key(board: chess.Board) -> tuple[str, tuple[str, ...]]:
        """The position and how it came about (repetitions and the 50-move rule depend on it)."""
        return board.root().fen(), tuple(move.uci() for move in board.move_stack)

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.score_many([board])[0]

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        new = [b for b in boards if self.key(b) not in self.memory]
        for board, scores in zip(new, self.scorer.score_many(new) if new else [], strict=True):
            self.memory[self.key(board)] = scores
        return [self.memory[self.key(b)] for b in boards]


def band_name(low: int, high: int) -> str:
    if low == 0:
        return f"<{high}"
    return f"≥{low}" if high >= 10_000 else f"{low}-{high - 1}"


def puzzle_report(puzzles: list[Puzzle], solved: list[bool]) -> dict[str, Any]:
    """Overall and per-rating-band accuracy."""
    bands = {}
    for low, high in BANDS:
        chosen = [s for p, s in zip(puzzles, solved, strict=True) if low <= p.rating < high]
        if chosen:
            bands[band_name(low, high)] = {
                "count": len(chosen),
                "accuracy": sum(chosen) / len(chosen),
            }
    return {"count": len(puzzles), "accuracy": sum(solved) / max(1, len(solved)), "bands": bands}


def evaluate_puzzles(scorer: MoveScorer, path: Path, limit: int | None = None) -> dict[str, Any]:
    """The report of ``oneply eval`` for one puzzle file."""
    puzzles = read_puzzles(path, limit)
    return {"file": str(path), **puzzle_report(puzzles, solve_puzzles(scorer, puzzles))}

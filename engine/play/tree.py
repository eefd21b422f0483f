"""The look-ahead's tree: its positions (Node) and the values no network is asked for.

Kept apart from the search (engine/play/search.py) because the alpha-beta check of the
fallback (engine/play/alphabeta.py) values finished games and mating moves by the same rules.
Values are win probabilities for the side to move at the node they belong to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import numpy as np


@dataclass
class Node:
    """A position in the tree; per legal move: prior, first value, visits and value sum."""

    board: chess.Board
    moves: list[chess.Move] = field(default_factory=list)
    priors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    first: np.ndarray = field(default_factory=lambda: np.zeros(0))  # network action values
    visits: np.ndarray = field(default_factory=lambda: np.zeros(0))
    totals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    children: dict[int, Node] = field(default_factory=dict)
    terminal: float | None = None  # exact value for the side to move, when the game is over
    expanded: bool = False

    def q(self) -> np.ndarray:
        """Each move's value for the side to move: searched mean, else the network's."""
        searched = self.totals / np.maximum(self.visits, 1)
        return np.where(self.visits > 0, searched, self.first)

    def value(self) -> float:
        """This position's value for the side to move (exact, searched or the network's)."""
        if self.terminal is not None:
            return self.terminal
        return float(self.q().max()) if len(self.moves) else 0.5


def exact_value(board: chess.Board) -> float | None:
    """The value of a finished game for the side to move (0 mated, 0.5 drawn), else None.

    Repetition counts as a draw once a position repeats inside the game and tree (the side
    to move can always repeat again), the usual rule of searching engines."""
    if board.is_checkmate():
        return 0.0
    if (
        board.is_stalemate()
        or board.is_insufficient_material()
        or board.is_fifty_moves()
        or board.is_repetition(2)
    ):
        return 0.5
    return None


def logit(wins: np.ndarray) -> np.ndarray:
    """Win probabilities as logits, clipped to [0.001, 0.999] (an exact win is 6.9)."""
    p = np.clip(wins, 0.001, 0.999)
    logits: np.ndarray = np.log(p / (1.0 - p))
    return logits


def mate_along(board: chess.Board, pv: list[chess.Move]) -> int | None:
    """UCI's `mate N` when the pv ends in checkmate: N > 0 the side to move mates in N moves,
    N < 0 it is mated."""
    end = board.copy(stack=False)
    for move in pv:
        end.push(move)
    if not pv or not end.is_checkmate():
        return None
    return (len(pv) + 1) // 2 if len(pv) % 2 else -(len(pv) // 2)


def mating_moves(board: chess.Board, moves: list[chess.Move]) -> np.ndarray:
    """1.0 for each move that checkmates, else 0.0."""
    out = np.zeros(len(moves))
    for i, move in enumerate(moves):
        if board.gives_check(move):
            board.push(move)
            out[i] = board.is_checkmate()
            board.pop()
    return out

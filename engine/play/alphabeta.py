"""Alpha-beta over the action-value network: the alternative issue 19 asked to measure against
PUCT (engine/play/search.py) before choosing.

Negamax with alpha-beta pruning, iterative deepening and the model's move ordering; only the
``width`` best moves by the network's action value (and every mating move) are searched at
each node (a full-width
tree is out of reach at a few hundred network calls). A node is one network call, as in
PUCT: scoring a position gives the value of every move, so a leaf's value is its best move's
action value, and the children of a node are scored together in one ``score_many`` call.
Finished games are valued exactly. The search stops when the next depth would pass the node
budget, and the last completed depth ranks the root's moves.

It is a measuring instrument, not an engine option: at equal nodes it beat PUCT only on the
dev puzzles at 16 nodes and lost at 64 and on held-out positions (docs/uci.md, "Why PUCT and not
alpha-beta"), so `oneply uci` and the bot search with PUCT.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import chess

from oneply.engine.play.inference import MoveScore, MoveScorer
from oneply.engine.play.tree import exact_value, mating_moves


class _OverBudget(Exception):
    """The depth being searched needs more network calls than the budget has left."""


class AlphaBeta:
    """Iterative-deepening alpha-beta over a MoveScorer, at most `nodes` network-scored
    positions per search."""

    def __init__(self, scorer: MoveScorer, nodes: int, width: int = 6) -> None:
        self.scorer, self.limit, self.width = scorer, nodes, width
        self.scored: dict[Hashable, list[MoveScore]] = {}
        self.depth = 0  # the last completed depth of the last search

    def _key(self, board: chess.Board) -> Hashable:
        return board._transposition_key()

    def _score(self, boards: Sequence[chess.Board]) -> None:
        """Score the positions not scored yet, in one call, if the budget allows."""
        new = {self._key(b): b for b in boards if self._key(b) not in self.scored}
        if not new:
            return
        if len(self.scored) + len(new) > self.limit:
            raise _OverBudget
        for key, scores in zip(new, self.scorer.score_many(list(new.values())), strict=True):
            self.scored[key] = scores

    def _children(self, board: chess.Board) -> list[chess.Move]:
        """The `width` best moves by the network, and every move that mates (a narrow
        search must not prune a mate the network undervalues)."""
        moves = [s.move for s in self.scored[self._key(board)]]
        mates = [m for m, mate in zip(moves, mating_moves(board, moves), strict=True) if mate]
        return mates + [m for m in moves[: self.width] if m not in mates]

    def _value(self, board: chess.Board, depth: int, alpha: float, beta: float) -> float:
        """Win probability for the side to move, searched `depth` plies below this node."""
        exact = exact_value(board)
        if exact is not None:
            return exact
        scores = self.scored[self._key(board)]
        if depth == 0:
            return scores[0].win
        moves = self._children(board)
        after = []
        for move in moves:
            child = board.copy(stack=True)
            child.push(move)
            after.append(child)
        self._score([c for c in after if exact_value(c) is None])
        best = 0.0
        for child in after:
            value = 1.0 - self._value(child, depth - 1, 1.0 - beta, 1.0 - alpha)
            best = max(best, value)
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        return best

    def _root_values(self, board: chess.Board, depth: int) -> dict[chess.Move, float]:
        values = {}
        alpha = 0.0
        for move in self._children(board):
            child = board.copy(stack=True)
            child.push(move)
            exact = exact_value(child)
            if exact is None:
                self._score([child])
                value = 1.0 - self._value(child, depth - 1, 0.0, 1.0 - alpha)
            else:
                value = 1.0 - exact
            values[move] = value
            alpha = max(alpha, value)
        return values

    def rank(self, board: chess.Board) -> list[MoveScore]:
        """The root's moves, searched ones by their value at the deepest completed depth,
        then the others by the network's value."""
        self.scored.clear()
        self.depth = 0
        self._score([board])
        first = self.scored[self._key(board)]
        searched: dict[chess.Move, float] = {}
        depth = 1
        while True:
            try:
                searched = self._root_values(board, depth)
            except _OverBudget:
                break
            self.depth = depth
            depth += 1
            if depth > 64:
                break
        ranked = sorted(
            (MoveScore(move, value) for move, value in searched.items()),
            key=lambda s: -s.win,
        )
        rest = [s for s in first if s.move not in searched]
        return ranked + rest


class AlphaBetaScorer:
    """A MoveScorer that searches each position with alpha-beta (see `SearchScorer` for
    PUCT's), so the puzzle solver and the arena can compare the two at equal nodes."""

    def __init__(self, scorer: MoveScorer, nodes: int, width: int = 6) -> None:
        self.search = AlphaBeta(scorer, nodes, width)

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.search.rank(board)

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        return [self.score(board) for board in boards]

"""Best-move games for `oneply train generate --labels best`: the cheap labels of issue 22.

The sv and bc predictors read only a position's value and its best move
(training/fit/targets.py), and Stockfish gives both from ONE search without MultiPV
(:meth:`StockfishScorer.score_best`, 2.4× the positions/s of scoring every move at depth 2).
So here each position reached gets that one search, and its record holds the best move's
value at the best move's slot and :data:`~oneply.training.data.compact.UNSCORED` at every other
(a best-only shard, training/data/compact.py).

Without every move's value there is no softmax to draw the next move from, so the move rule
keeps the all-moves mode's two value-free shares and replaces the softmax by a "mistake" rule:

* with probability ``random_share`` a uniformly random legal move;
* with probability ``greedy_share`` the most valuable capture (as the all-moves games);
* otherwise Stockfish's best move — except, with the game's **mistake probability**
  ``min(MISTAKE_CAP, MISTAKE_PER_TEMPERATURE × temperature)``, a uniformly random legal move.

The temperature is drawn per game exactly as the all-moves games draw it (log-uniform in
``[min_temperature, max_temperature]``), so the same knobs keep meaning "how sloppy the game
is": with the defaults (0.005…0.2) the mistake probability runs from 1% to 40% per game,
about 11% on average — where the all-moves softmax's high temperatures make their
inaccuracies. Why uniform: a random move is what the softmax degenerates to at a high
temperature, and it needs no values; the cap keeps the best move the most likely.

Everything else is the all-moves games' (training/data/scored_games.py): openings, the decided
rule (the best value is exactly what it reads), reproducibility (game g is played from its own
stream (seed, g), each position is searched in a fresh Stockfish game) and the per-worker cache
of position values.
"""

from __future__ import annotations

import random

import chess
import numpy as np

from oneply.engine.stockfish import StockfishError
from oneply.training.data.compact import UNSCORED
from oneply.training.data.scored_games import GamePlayer

#: the mistake probability per unit of the game's temperature ...
MISTAKE_PER_TEMPERATURE = 2.0
#: ... and its ceiling
MISTAKE_CAP = 0.5


def mistake_probability(temperature: float) -> float:
    """How often a best-move game plays a uniformly random move instead of the best (the rule
    of the module docstring)."""
    return min(MISTAKE_CAP, MISTAKE_PER_TEMPERATURE * temperature)


class BestGamePlayer(GamePlayer):
    """Plays best-move games with one Stockfish; records hold one scored move each."""

    def score(self, board: chess.Board) -> np.ndarray:
        """The legal moves' values in generation order: the best move's win probability at
        its slot, :data:`UNSCORED` elsewhere (one search, a fresh Stockfish game)."""
        if self.alive is not None:
            self.alive()
        found = self.engine.score_best(board, self.settings.limit())
        if found is None:
            raise StockfishError(f"no legal move to label in {board.fen()}")
        best, value = found
        moves = list(board.legal_moves)
        wins = np.full(len(moves), UNSCORED, dtype=np.float32)
        wins[moves.index(best)] = value
        return wins

    def bench(self, board: chess.Board) -> None:
        """The scoring call alone (the run's Stockfish-alone measurement)."""
        self.engine.score_best(board, self.settings.limit())

    def policy_move(
        self, moves: list[chess.Move], wins: np.ndarray, temperature: float, rng: random.Random
    ) -> chess.Move:
        """Stockfish's best move (the one scored slot), or with the game's mistake
        probability a uniformly random one (the module docstring's rule)."""
        if rng.random() < mistake_probability(temperature):
            return rng.choice(moves)
        return moves[int(wins.argmax())]

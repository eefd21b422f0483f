"""Score-driven games for `oneply train generate`: each position reached is scored, and the
next move is drawn from those scores.

Why one pass: the old two-step path (`positions` by Stockfish self-play, then `annotate`) paid
for two engine searches per position, and Stockfish self-play rarely hangs a piece — while the
positions a bot meets and every Lichess puzzle start right after a mistake. Here the scores
drive the games: every position reached has all its legal moves scored (as `annotate` does),
and the next move is drawn from those very scores, so the labels cost the only search:

* with probability ``random_share`` a uniformly random legal move;
* with probability ``greedy_share`` the most valuable capture (a one-ply material grabber);
* otherwise a softmax over the moves' win probabilities at the game's temperature (drawn per
  game, log-uniform in ``[min_temperature, max_temperature]``): low temperatures play well,
  high ones make the inaccuracies and blunders real players make.

With a *learner* (``generate --learner MODEL.onnx``, training/data/learner.py), a share
``learner_share`` of the games has the model itself play one side, drawn per game, with its
plain argmax: the positions its own moves lead to are then scored like any others, so the
model learns the values of the positions it actually gets into (DAgger's remedy for an
imitator that drifts off its teacher's positions). Whether a game has the learner, and which
side, comes from a random stream of its own: the other games are move for move those of a run
without a learner.

Games start from a polyglot book walk, an ECO line prefix or a few random moves
(training/data/openings.py) and run to the end, ``max_plies``, or until the game
is decided: ``decided_plies`` positions in a row whose best move wins (or loses) with
probability ``decided_win`` or more. Without that rule most positions came from long, lost
endgames shuffled to the fifty-move rule (see `oneply train inspect`).

Unique positions: a position (board, side, castling, en passant — the first 71 state tokens) is
emitted at most once per output directory, across workers and runs; puzzle positions of the
exclusion CSVs are never emitted. That filter is applied by the caller (training/data/generate.py),
in game order, and never steers a game: a game depends only on the settings and its number.

Reproducible: Stockfish starts a new game (``ucinewgame``, clearing hash and history) before
each position, so a position's values depend only on the position and the settings; and since
the next move is drawn from those values with the game's own random stream, the whole game —
and so the output of a run — is the same for any worker count and any interruption. A position
met again (same clocks) in a worker's later game reuses its values from a cache instead of a
new search: the same values, cheaper. Stockfish sees the position without the game's move
stack, so the path to a position does not change its values either.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import chess
import chess.engine
import chess.polyglot
import numpy as np

from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.engine.model.values import sample_softmax
from oneply.training.data.openings import game_finished, play_opening
from oneply.training.data.stockfish_scorer import StockfishScorer

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}

#: the learner's move in a position (training/data/learner.py: a model file's argmax)
Learner = Callable[[chess.Board], chess.Move]


@dataclass(frozen=True)
class GameSettings:
    """How games are played and scored; all of it is recorded in the manifest."""

    seed: int = 0
    depth: int | None = 2
    nodes: int | None = None
    min_temperature: float = 0.005
    max_temperature: float = 0.2
    random_share: float = 0.05
    greedy_share: float = 0.1
    max_plies: int = 400
    book_share: float = 0.6
    eco_share: float = 0.25
    decided_win: float = 0.9
    decided_plies: int = 6
    #: share of games in which the learner plays one side (0: none; module docstring)
    learner_share: float = 0.0

    def limit(self) -> chess.engine.Limit:
        if self.nodes is not None:
            return chess.engine.Limit(nodes=self.nodes)
        return chess.engine.Limit(depth=self.depth)


@dataclass
class Record:
    """One scored position: its key, FEN, state tokens and its legal moves' win probabilities
    (python-chess generation order)."""

    key: bytes
    fen: str
    state: np.ndarray
    wins: np.ndarray


def greedy_capture(board: chess.Board) -> chess.Move | None:
    """The capture of the most valuable piece (cheapest capturer on ties), or None."""
    best, best_gain = None, -1.0
    for move in board.legal_moves:
        if not board.is_capture(move):
            continue
        victim = board.piece_type_at(move.to_square) or chess.PAWN  # en passant
        attacker = board.piece_type_at(move.from_square) or chess.PAWN
        gain = PIECE_VALUES.get(victim, 0) - PIECE_VALUES.get(attacker, 0) / 100
        if gain > best_gain:
            best, best_gain = move, gain
    return best


class GamePlayer:
    """Plays score-driven games with one Stockfish (one per worker process)."""

    CACHE_SIZE = 50_000  # positions whose values a worker keeps for its later games

    def __init__(
        self,
        settings: GameSettings,
        engine: StockfishScorer,
        books: list[chess.polyglot.MemoryMappedReader],
        eco_lines: list[list[str]],
        alive: Callable[[], None] | None = None,
        learner: Learner | None = None,
    ) -> None:
        if settings.learner_share > 0 and learner is None:
            raise ValueError("learner_share > 0 needs a learner")
        self.settings = settings
        self.learner = learner
        self.engine = engine
        self.books = books
        self.eco_lines = eco_lines
        self.cache: dict[bytes, np.ndarray] = {}
        self.alive = alive  # called before each search: a chance to stop an orphaned worker

    def score(self, board: chess.Board) -> np.ndarray:
        """Legal moves' win probabilities in generation order, from a fresh Stockfish game."""
        if self.alive is not None:
            self.alive()
        values = self.engine.score_moves(board, self.settings.limit())
        return np.array([values[m] for m in board.legal_moves], dtype=np.float32)

    def bench(self, board: chess.Board) -> None:
        """The scoring call alone (the run's Stockfish-alone measurement)."""
        self.engine.score_moves(board, self.settings.limit())

    def choose(
        self,
        board: chess.Board,
        moves: list[chess.Move],
        wins: np.ndarray,
        temperature: float,
        rng: random.Random,
    ) -> chess.Move:
        roll = rng.random()
        if roll < self.settings.random_share:
            return rng.choice(moves)
        if roll < self.settings.random_share + self.settings.greedy_share:
            capture = greedy_capture(board)
            if capture is not None:
                return capture
        return self.policy_move(moves, wins, temperature, rng)

    def policy_move(
        self, moves: list[chess.Move], wins: np.ndarray, temperature: float, rng: random.Random
    ) -> chess.Move:
        """The move drawn from the values (the shares above aside): a softmax over them at
        the game's temperature."""
        return moves[sample_softmax(wins.astype(np.float64), temperature, rng)]

    def learner_side(self, game_number: int) -> chess.Color | None:
        """The side the learner plays in game `game_number`, or None: a game without it. A
        stream of its own (seed, game, "learner"), so that the games without the learner draw
        exactly what they would draw in a run without one."""
        share = self.settings.learner_share
        if share <= 0:
            return None
        rng = random.Random(f"{self.settings.seed}:{game_number}:learner")
        if rng.random() >= share:
            return None
        return chess.WHITE if rng.random() < 0.5 else chess.BLACK

    def play(self, game_number: int) -> Iterator[Record]:
        """One game, seeded by (seed, game_number); yields every position it scored, in order
        (repeats included: the caller keeps the first)."""
        s = self.settings
        rng = random.Random(f"{s.seed}:{game_number}")
        learner_side = self.learner_side(game_number)
        board = chess.Board()
        play_opening(board, rng, self.books, self.eco_lines, s.book_share, s.eco_share)
        low, high = math.log(s.min_temperature), math.log(s.max_temperature)
        temperature = math.exp(rng.uniform(low, high))
        decided = 0  # consecutive positions whose best move wins or loses almost surely
        while board.ply() < s.max_plies and not game_finished(board) and decided < s.decided_plies:
            state = tokenize(board)
            key = position_key(state)
            full = state.astype(np.uint8).tobytes()  # the clocks change the values a little
            wins = self.cache.get(full)
            if wins is None:
                wins = self.score(board)
                if len(self.cache) >= self.CACHE_SIZE:
                    self.cache.clear()
                self.cache[full] = wins
            yield Record(key=key, fen=board.fen(), state=state.astype(np.uint8), wins=wins)
            best = float(wins.max())
            decided = decided + 1 if max(best, 1 - best) >= s.decided_win else 0
            if board.turn == learner_side and self.learner is not None:
                board.push(self.learner(board))
            else:
                board.push(self.choose(board, list(board.legal_moves), wins, temperature, rng))

"""What to play when inference fails: one rule for `oneply uci` and the bot.

A model that cannot be loaded or crashes must not lose a game on time, so the engine still
moves: a short Stockfish search when Stockfish is available and there is time to use it,
else a uniformly random legal move (never "the first legal move", which would shuffle the
same piece every time). The Decision-level rules (engine/play/policy.py) need the model's scores;
this needs only the board.
"""

from __future__ import annotations

import logging
import random
import threading

import chess
import chess.engine

from oneply.engine.stockfish import StockfishStartError, close_stockfish, open_stockfish

log = logging.getLogger("oneply.fallback")

#: Stockfish is started for a fallback move only with at least this much time left
START_BUDGET_S = 1.0


class Fallback:
    """A legal move without the model: a short Stockfish search, else a random legal move.

    Stockfish is started on first need and kept; one that is missing or fails is given up
    (random moves from then on), so a broken setup costs one warning, not time per move.
    """

    def __init__(self, stockfish_path: str | None, think_s: float = 0.05):
        self.stockfish_path = stockfish_path
        self.think_s = think_s
        self._engine: chess.engine.SimpleEngine | None = None
        self._lock = threading.Lock()

    def move(self, board: chess.Board, budget_s: float | None = None) -> tuple[chess.Move, str]:
        """The move and the rule that produced it (`fallback_stockfish` / `fallback_random`;
        the null move and `no-legal-move` when there is none). `budget_s` bounds the time."""
        legal = list(board.legal_moves)
        if not legal:
            return chess.Move.null(), "no-legal-move"
        with self._lock:
            try:
                engine = self._open(budget_s)
                if engine is not None:
                    think = self.think_s if budget_s is None else min(self.think_s, budget_s / 4)
                    result = engine.play(board, chess.engine.Limit(time=think))
                    if result.move in legal:
                        return result.move, "fallback_stockfish"
            except Exception as error:  # a dead Stockfish must not stop the game either
                log.warning("event=stockfish_failed error=%r", error)
                self.close_engine()
                self.stockfish_path = None
        return random.choice(legal), "fallback_random"

    def _open(self, budget_s: float | None) -> chess.engine.SimpleEngine | None:
        if self._engine is None and self.stockfish_path:
            if budget_s is not None and budget_s < START_BUDGET_S:
                return None  # no time to start it now; a later move may
            try:
                self._engine = open_stockfish(self.stockfish_path)
            except StockfishStartError as error:
                log.warning("event=stockfish_missing path=%s error=%r", self.stockfish_path, error)
                self.stockfish_path = None  # not installed: random moves from now on
        return self._engine

    def close_engine(self) -> None:
        if self._engine is not None:
            close_stockfish(self._engine)
            self._engine = None

    def close(self) -> None:
        with self._lock:
            self.close_engine()

"""The fake Lichess server's games: one game's state and the NDJSON payloads Lichess sends for it.

tests/helpers/lichess_server.py (FakeLichess, the entry point the tests import) keeps a FakeGame
per game and tests/helpers/lichess_handler.py streams its `full()` and `state()` payloads; this
module holds the game on its own so that the server's scripting and its HTTP routing need not
carry the board, clock and result rules. Also the scripted opponents (`Opponent`) and `BOT`, the
bot's account name, which both of them use.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import chess

Opponent = Callable[[chess.Board], str | None]
BOT = "oneplybot"


def random_opponent(seed: int = 0) -> Opponent:
    rng = random.Random(seed)
    return lambda board: rng.choice(list(board.legal_moves)).uci()


def idle_opponent(board: chess.Board) -> str | None:
    """Never moves (for the abort scenario)."""
    return None


@dataclass
class FakeGame:
    id: str
    bot_color: chess.Color
    opponent: Opponent
    opponent_name: str = "human1"
    initial_fen: str = "startpos"
    clock_ms: int = 180_000
    increment_ms: int = 2_000
    rated: bool = False
    speed: str = "blitz"
    resign_at_ply: int | None = None
    moves: list[str] = field(default_factory=list)
    status: str = "started"
    winner: str | None = None
    opponent_draw_offer: bool = False
    #: the bot's clock runs as on Lichess: each move costs the time since its turn began
    #: (plus the increment after it), and a bot that lets it reach zero loses on time
    running_clock: bool = False
    bot_left_ms: float = 0.0
    turn_started: float = field(default_factory=time.monotonic)
    think_ms: list[float] = field(default_factory=list)  # the bot's time for each move
    chat_lines: list[dict[str, Any]] = field(default_factory=list)  # chatLine events to send
    version: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.bot_left_ms = float(self.clock_ms)

    def board(self) -> chess.Board:
        board = chess.Board() if self.initial_fen == "startpos" else chess.Board(self.initial_fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board

    def player(self, color: chess.Color) -> dict[str, Any]:
        if color == self.bot_color:
            return {"id": BOT, "name": "OneplyBot", "title": "BOT", "rating": 2000}
        return {"id": self.opponent_name, "name": self.opponent_name.title(), "rating": 1500}

    def bot_clock_ms(self) -> float:
        """What the bot has left now (its turn's time counted as it runs)."""
        if self.board().turn == self.bot_color and self.status == "started":
            return self.bot_left_ms - 1000 * (time.monotonic() - self.turn_started)
        return self.bot_left_ms

    def state(self) -> dict[str, Any]:
        offer = "bdraw" if self.bot_color == chess.WHITE else "wdraw"
        bot_ms = int(self.bot_left_ms) if self.running_clock else self.clock_ms
        white, black = (bot_ms, self.clock_ms) if self.bot_color else (self.clock_ms, bot_ms)
        state = {
            "type": "gameState",
            "moves": " ".join(self.moves),
            "wtime": white,
            "btime": black,
            "winc": self.increment_ms,
            "binc": self.increment_ms,
            "status": self.status,
            offer: self.opponent_draw_offer,
        }
        if self.winner:
            state["winner"] = self.winner
        return state

    def full(self) -> dict[str, Any]:
        return {
            "type": "gameFull",
            "id": self.id,
            "rated": self.rated,
            "speed": self.speed,
            "variant": {"key": "standard" if self.initial_fen == "startpos" else "fromPosition"},
            "clock": {"initial": self.clock_ms, "increment": self.increment_ms},
            "createdAt": int(time.time() * 1000),
            "white": self.player(chess.WHITE),
            "black": self.player(chess.BLACK),
            "initialFen": self.initial_fen,
            "state": self.state(),
        }

    def push(self, uci: str) -> None:
        """Play a move (already checked legal) and settle the result if the game ended."""
        # like Lichess, the clocks start after each side's first move
        if self.running_clock and self.board().turn == self.bot_color and len(self.moves) >= 2:
            self.think_ms.append(1000 * (time.monotonic() - self.turn_started))
            self.bot_left_ms -= self.think_ms[-1]
            if self.bot_left_ms <= 0:
                self.end("outoftime", not self.bot_color)
                return
            self.bot_left_ms += self.increment_ms
        self.turn_started = time.monotonic()
        self.moves.append(uci)
        board = self.board()
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            mated = outcome.termination == chess.Termination.CHECKMATE
            self.status = "mate" if mated else "draw"
            if outcome.winner is not None:
                self.winner = "white" if outcome.winner else "black"
        self.touch()

    def end(self, status: str, winner: chess.Color | None) -> None:
        self.status = status
        self.winner = None if winner is None else ("white" if winner else "black")
        self.touch()

    def touch(self) -> None:
        with self.cond:
            self.version += 1
            self.cond.notify_all()

"""The move policy: from the model's scores and the game so far to the move to play.

One policy serves `oneply uci`, `oneply analyse` and the bot. The engine scores every legal
move (engine/inference.py); the policy turns those scores into a decision and records which
rule decided it, so users can see why a move was played.

This is the minimal version (argmax); the move-policy issue adds repetition damping, opening
sampling, the Stockfish mate-consistency fallback and clock safety behind the same API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess

from engine.inference import MoveScore


@dataclass
class PolicyConfig:
    """Settings of the move policy (UCI options and config.yml keys map onto these)."""


@dataclass(frozen=True)
class Decision:
    """The chosen move, its expected win, and the rule that chose it."""

    move: chess.Move
    win: float
    rule: str
    scores: tuple[MoveScore, ...] = ()


class MovePolicy:
    """Chooses moves. `board` carries the game's move stack (repetitions are known from it);
    `scores` are the model's scores for every legal move, best first; `deadline` is a
    time.monotonic() instant by which the decision must be made, or None."""

    #: UCI options this policy adds: (name, type, default, min, max); see engine/uci.py
    UCI_OPTIONS: tuple[tuple[str, str, object, object, object], ...] = ()

    def __init__(self, config: PolicyConfig | None = None):
        self.config = config or PolicyConfig()

    def set_option(self, name: str, value: str) -> bool:
        """Apply a UCI option by name; False when the policy has no such option."""
        return False

    def choose(
        self, board: chess.Board, scores: Sequence[MoveScore], deadline: float | None = None
    ) -> Decision:
        best = scores[0]
        return Decision(best.move, best.win, "best", tuple(scores))

    def new_game(self) -> None:
        """Forget per-game state (UCI ucinewgame, a new bot game)."""

    def close(self) -> None:
        """Release resources (the fallback Stockfish)."""

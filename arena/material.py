"""Moves that give material away by static exchange, counted over a match's games.

Why: against Stockfish's weakest levels the searchless engine loses games less to deep tactics
than to "the knight goes where a pawn takes it" — a piece moved onto a square the opponent wins
by plain exchange. The suite counts such moves for both sides (engine/facts/exchange.py's swap rule:
a move whose exchange on its destination nets the mover −2 pawns or worse, so a minor piece or
more, not a pawn offered for activity), so a new model's report shows whether it hangs fewer
pieces, not only whether it scores more. A sacrifice that works counts too: read the rate beside
the score.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import chess
import chess.pgn

from oneply.engine.facts.exchange import move_exchange

#: a move "gives material" when its static exchange nets the mover this many pawns or fewer
GIVES_AWAY = -2


@dataclass
class Giveaways:
    """One side's moves in some games, and how many of them gave material away."""

    moves: int = 0
    gives: int = 0

    @property
    def rate(self) -> float | None:
        return self.gives / self.moves if self.moves else None

    def add(self, other: Giveaways) -> None:
        self.moves += other.moves
        self.gives += other.gives

    def to_list(self) -> list[int]:
        return [self.gives, self.moves]


def count_game(pgn: str, side: chess.Color) -> tuple[Giveaways, Giveaways]:
    """(`side`'s tally, the other side's) over one game's PGN text (any start position)."""
    game = chess.pgn.read_game(io.StringIO(pgn))
    tallies = {chess.WHITE: Giveaways(), chess.BLACK: Giveaways()}
    if game is None:
        return tallies[side], tallies[not side]
    board = game.board()
    for move in game.mainline_moves():
        tally = tallies[board.turn]
        tally.moves += 1
        tally.gives += move_exchange(board, move) <= GIVES_AWAY
        board.push(move)
    return tallies[side], tallies[not side]


def count_match(games: list[tuple[str, chess.Color]]) -> tuple[Giveaways, Giveaways]:
    """Summed over (PGN, the counted side's colour) pairs: (counted side, their opponents)."""
    own, other = Giveaways(), Giveaways()
    for pgn, side in games:
        mine, theirs = count_game(pgn, side)
        own.add(mine)
        other.add(theirs)
    return own, other

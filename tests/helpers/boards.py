"""Positions for the tests that check a fact, a scorer or an engine on many boards."""

from __future__ import annotations

import random

import chess


def random_positions(count: int, seed: int, plies: int = 160) -> list[chess.Board]:
    """Positions of random games of 6 to `plies` plies (promotions, castling and mating nets
    included; fewer plies, more middlegames)."""
    rng, boards = random.Random(seed), []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(6, plies)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        if not board.is_game_over():
            boards.append(chess.Board(board.fen()))
    return boards

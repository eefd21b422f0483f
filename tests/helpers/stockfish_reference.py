"""An independent reference for the data engine's labels: every legal move of a position scored
through python-chess's own engine client (`analyse` with MultiPV), not oneply's UCI pipe
(training/data/stockfish_scorer.py). Where the two agree, the labels are Stockfish's."""

from __future__ import annotations

import chess
import chess.engine

from oneply.engine.model.values import score_to_win
from oneply.engine.stockfish import multipv_scores
from oneply.training.data.stockfish_scorer import settled_and_searched


def reference_values(
    engine: chess.engine.SimpleEngine, board: chess.Board, limit: chess.engine.Limit
) -> dict[chess.Move, float]:
    """Win probability (for the mover) of each legal move, from a fresh Stockfish game."""
    values, searched = settled_and_searched(board)
    if searched:
        root = board.copy(stack=False)
        scores = multipv_scores(engine, root, limit, searched, game=object())
        values.update((move, score_to_win(score)) for move, score in scores.items())
    for move in searched:
        if move not in values:
            child = board.copy(stack=False)
            child.push(move)
            values[move] = 1.0 - score_to_win(
                engine.analyse(child, limit, game=object())["score"].relative
            )
    return values

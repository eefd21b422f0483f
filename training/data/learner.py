"""The learner: a model file playing one side of `oneply train generate`'s games.

Why: the trainer imitates Stockfish's values on positions that Stockfish-driven games reach,
but in its own games the model reaches positions of its own making — after its typical
inaccuracies, in the structures its preferences steer to. An imitator is only as good as its
values there (DAgger, Ross et al. 2011: let the learner choose where the teacher labels).
`generate --learner MODEL.onnx --learner-share P` has the model play one side of a share P of
the games with its plain argmax (no policy rules); every position of those games is still
scored by Stockfish, move by move, like every other position (training/data/scored_games.py).

The learner is the model file as it is at the start of a run; a run's manifest records the
file's SHA-256, so a directory is resumed only with the very same learner (its games, and so
its positions, depend on the model's moves).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import chess

from oneply.engine.play.inference import Scorer
from oneply.training.data.scored_games import Learner

#: of the games, the share the learner plays in when `--learner` is given without a share
DEFAULT_SHARE = 0.5


def file_digest(path: str | Path) -> str:
    """The model file's SHA-256 (hex): what a directory's manifest records of its learner."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_learner(path: str | Path, threads: int = 1) -> Learner:
    """The model file's move in a position: the legal move of highest expected win (the
    engine's plain argmax), one onnxruntime session on `threads` threads."""
    scorer = Scorer(path, threads=threads)

    def move(board: chess.Board) -> chess.Move:
        return scorer.score(board)[0].move

    return move

"""Running a torch model or a model file on boards, facts included when the model reads them
(one helper for every test that compares log-probabilities)."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np

from oneply.engine.facts.moves import MOVES, move_id
from oneply.engine.model.mirror import MIRROR_MOVE
from oneply.engine.play.inference import Scorer, encode_batch


def children(board: chess.Board) -> list[chess.Board]:
    """The position after each legal move, in legal-move order: what a state-value model
    scores a move by."""
    after = []
    for move in board.legal_moves:
        child = board.copy()
        child.push(move)
        after.append(child)
    return after


def torch_log_probs(model, boards: Sequence[chess.Board], layout: str = "shared"):
    """(log-probs [B, N, K], move ids [B, N]) of an ActionValueModel."""
    import torch

    encoded = encode_batch(boards, facts=bool(model.config.features))
    tensors = [torch.from_numpy(a) for a in encoded.arrays()]
    with torch.no_grad():
        out = model(*tensors[:2], layout, *tensors[2:])
    return out.numpy(), encoded.ids


def file_log_probs(scorer: Scorer, boards: Sequence[chess.Board]) -> np.ndarray:
    """Log-probs [B, N, K] of a model file (one session run)."""
    return scorer.log_probs(*encode_batch(boards, facts=scorer.reads_facts).arrays())


def randomise_fact_tables(model) -> None:
    """The fact tables start at zero (a warm start computes its source); parity tests need
    them to matter."""
    import torch

    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("fact_embed.weight"):
                parameter.normal_(0.0, 0.02)


def scores_by_move(model, board: chess.Board, layout: str) -> dict[str, np.ndarray]:
    """Log-probs per move, keyed by the move as seen from the side to move (black's moves
    rank-flipped), so a position and its colour-flipped twin use the same keys."""
    moves = [list(board.legal_moves)]
    if isinstance(model, Scorer):
        out = file_log_probs(model, [board])[0]
    else:
        out = torch_log_probs(model, [board], layout)[0][0]
    black = board.turn == chess.BLACK
    keys = [MOVES[MIRROR_MOVE[move_id(m)]] if black else m.uci() for m in moves[0]]
    return dict(zip(keys, out, strict=True))


def predictor_model(predictor: str, seed: int = 3, **changes):
    """A tiny ActionValueModel of a predictor (av, sv, bc) with fact tables that matter."""
    import dataclasses

    import torch

    from oneply.training.model.model import PRESETS, ActionValueModel

    torch.manual_seed(seed)
    config = dataclasses.replace(PRESETS["tiny"], predictor=predictor, **changes)
    model = ActionValueModel(config).eval()
    randomise_fact_tables(model)
    return model

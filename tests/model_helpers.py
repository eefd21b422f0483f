"""Running a torch model or a model file on boards, facts included when the model reads them
(one helper for every test that compares log-probabilities)."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np

from oneply.engine.inference import Scorer, encode_batch


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

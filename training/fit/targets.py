"""What the model is trained to predict and how it is scored: HL-Gauss / one-hot targets over
the value bins, the masked cross-entropy, and action accuracy.

The three predictors (``--predictor``, engine/model/architecture.PREDICTORS) train on the same
shards, whose rows hold every legal move's win probability:

- ``av``: each move's value, HL-Gauss (or one-hot) over the K bins; loss per action value.
- ``sv``: the position's value for the side to move = its best move's value, HL-Gauss (or
  one-hot) over the K bins; loss per position.
- ``bc``: the best move (the first legal move with the highest value), cross-entropy over the
  legal moves; loss per position.

Accuracy (``hits``): ``av`` and ``bc`` — is the move the model ranks first among Stockfish's
best (within BEST_TOLERANCE)? The same measure for both. ``sv`` sees no moves in training, so its
accuracy is a value accuracy: is the expected value within VALUE_TOLERANCE of Stockfish's? (Its
action accuracy needs every child scored: the puzzle check does that.)"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from oneply.engine.model.values import (
    BEST_TOLERANCE,
    HL_GAUSS_SIGMA,
    NUM_BINS,
    all_bin_edges,
    bin_centres,
    hl_gauss_scale,
    value_to_bin,
)
from oneply.training.fit.batches import Batch
from oneply.training.fit.config import TrainConfig

#: sv "accuracy": the expected value within this much of Stockfish's (win probability)
VALUE_TOLERANCE = 0.05


def hl_gauss_targets(
    wins: torch.Tensor, num_bins: int = NUM_BINS, sigma: float = HL_GAUSS_SIGMA
) -> torch.Tensor:
    """:func:`oneply.engine.model.values.hl_gauss` on the training device: the same edges and scale,
    computed in torch so a batch's targets never leave the GPU."""
    edges = torch.as_tensor(all_bin_edges(num_bins), dtype=torch.float32, device=wins.device)
    cdf = torch.special.erf((edges - wins.float().unsqueeze(-1)) / hl_gauss_scale(num_bins, sigma))
    mass = cdf[..., 1:] - cdf[..., :-1]
    targets: torch.Tensor = mass / mass.sum(dim=-1, keepdim=True)
    return targets


def one_hot_targets(wins: torch.Tensor, num_bins: int = NUM_BINS) -> torch.Tensor:
    """The bin holding each win probability, by :func:`oneply.engine.model.values.value_to_bin`
    (the one bin rule; a round trip to the CPU, acceptable for this non-default target)."""
    bins = value_to_bin(wins.detach().float().cpu().numpy(), num_bins)
    return F.one_hot(torch.from_numpy(bins).to(wins.device), num_bins).float()


def make_targets(wins: torch.Tensor, config: TrainConfig) -> torch.Tensor:
    if config.target == "one_hot":
        return one_hot_targets(wins)
    return hl_gauss_targets(wins, sigma=config.sigma)


def expected_wins(log_probs: torch.Tensor) -> torch.Tensor:
    """Σ p_i · centre_i over the bins (the torch twin of engine.model.values.expected_win)."""
    centres = bin_centres(log_probs.shape[-1])
    return log_probs.exp() @ torch.as_tensor(
        centres, dtype=log_probs.dtype, device=log_probs.device
    )


def action_hits(log_probs: torch.Tensor, wins: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per position: is the move with the highest predicted win among Stockfish's best?"""
    predicted = expected_wins(log_probs.float()).masked_fill(~mask, -1.0)
    chosen = wins.gather(1, predicted.argmax(dim=1, keepdim=True)).squeeze(1)
    best = wins.masked_fill(~mask, -1.0).max(dim=1).values
    return chosen >= best - BEST_TOLERANCE


def predictor_of(model: torch.nn.Module) -> str:
    """The predictor of a model, also when wrapped (DistributedDataParallel's ``module``)."""
    inner: Any = getattr(model, "module", model)
    return str(inner.config.predictor)


def position_values(batch: Batch) -> torch.Tensor:
    """[B] each position's value for the side to move: its best legal move's value (sv)."""
    return batch.wins.masked_fill(~batch.mask, -1.0).max(dim=1).values


def best_slots(batch: Batch) -> torch.Tensor:
    """[B] the slot of each position's best move, the first of equals (the bc target)."""
    return batch.wins.masked_fill(~batch.mask, -1.0).argmax(dim=1)


def label_count(batch: Batch, predictor: str) -> int:
    """What the reported loss is averaged over: action values (av) or positions (sv, bc)."""
    return batch.action_values if predictor == "av" else len(batch.states)


def forward(model: torch.nn.Module, batch: Batch, layout: str) -> torch.Tensor:
    """Log-probs [B, N, K]; per_move runs only the real (position, move) pairs. sv: [B, K],
    bc: [B, N] (training/model/model.py; no layout)."""
    if predictor_of(model) != "av":
        values: torch.Tensor = model(batch.states, batch.moves, layout, batch.square_facts, None)
        return values
    if layout == "shared":
        shared: torch.Tensor = model(
            batch.states, batch.moves, "shared", batch.square_facts, batch.move_facts
        )
        return shared
    rows, cols = batch.mask.nonzero(as_tuple=True)
    squares = None if batch.square_facts is None else batch.square_facts[rows]
    per_move = None if batch.move_facts is None else batch.move_facts[rows, cols].unsqueeze(1)
    moves = batch.moves[rows, cols].unsqueeze(1)
    flat = model(batch.states[rows], moves, "per_move", squares, per_move)
    out: torch.Tensor = flat.new_zeros(*batch.moves.shape, flat.shape[-1])
    out[rows, cols] = flat[:, 0]
    return out


def move_losses(log_probs: torch.Tensor, batch: Batch, config: TrainConfig) -> torch.Tensor:
    """Cross-entropy [B, N] of each real move against its target (0 on padding)."""
    targets = make_targets(batch.wins, config)
    per_move = -(targets * log_probs.float()).sum(dim=-1)
    return per_move.masked_fill(~batch.mask, 0.0)


def position_losses(log_probs: torch.Tensor, batch: Batch, config: TrainConfig) -> torch.Tensor:
    """Cross-entropy [B] per position: sv against its value's bins, bc against its best move."""
    if config.predictor == "sv":
        targets = make_targets(position_values(batch), config)
        return -(targets * log_probs.float()).sum(dim=-1)
    return -log_probs.float().gather(1, best_slots(batch).unsqueeze(1)).squeeze(1)


def loss_sum(log_probs: torch.Tensor, batch: Batch, config: TrainConfig) -> torch.Tensor:
    """Summed cross-entropy over the real moves (sv, bc: over the positions; the caller divides
    by label_count): the loss every run reports, whatever else it optimises."""
    if config.predictor != "av":
        return position_losses(log_probs, batch, config).sum()
    return move_losses(log_probs, batch, config).sum()


def hits(log_probs: torch.Tensor, batch: Batch, predictor: str) -> torch.Tensor:
    """Per position, the accuracy of this module's docstring for the predictor."""
    if predictor == "av":
        return action_hits(log_probs, batch.wins, batch.mask)
    if predictor == "sv":
        return (expected_wins(log_probs.float()) - position_values(batch)).abs() <= VALUE_TOLERANCE
    chosen = log_probs.float().masked_fill(~batch.mask, float("-inf")).argmax(dim=1, keepdim=True)
    best = position_values(batch)
    return batch.wins.gather(1, chosen).squeeze(1) >= best - BEST_TOLERANCE


def best_gaps(wins: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per position: how much better its best move is than its second (0 with one move)."""
    top = wins.masked_fill(~mask, -1.0).topk(min(2, wins.shape[1]), dim=1).values
    if top.shape[1] < 2:
        return torch.zeros_like(top[:, 0])
    return (top[:, 0] - top[:, 1]).clamp(min=0.0) * (top[:, 1] >= 0)


def ranking_loss_sum(
    log_probs: torch.Tensor, wins: torch.Tensor, mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Listwise ranking loss (ListNet), summed over positions.

    Why: the engine plays the argmax of the expected wins, and HL-Gauss trains each move's
    value on its own; this trains the order of a position's moves directly. Per position, the
    cross-entropy between softmax(wins / T) — Stockfish's values — and softmax(expected / T)
    — the model's — over its legal moves, T in win-probability units.
    """
    predicted = expected_wins(log_probs.float()) / temperature
    target = (wins.float() / temperature).masked_fill(~mask, float("-inf")).softmax(dim=-1)
    log_model = predicted.masked_fill(~mask, float("-inf")).log_softmax(dim=-1)
    return -(target * log_model.masked_fill(~mask, 0.0)).sum()


def objective(
    log_probs: torch.Tensor, batch: Batch, config: TrainConfig, values: int, positions: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(what a step minimises, the plain cross-entropy sum it reports).

    The objective is the cross-entropy per action value, each position's moves weighted by
    1 + gap_weight · (best − second value), plus rank_weight × the ranking loss per position.
    `values` and `positions` count the whole step's batch (micro-batches add up to it).
    sv and bc: the cross-entropy per position, weighted the same way (no ranking loss).
    """
    if config.predictor != "av":
        per_position = position_losses(log_probs, batch, config)
        plain = per_position.sum()
        if config.gap_weight:
            per_position = per_position * (
                1.0 + config.gap_weight * best_gaps(batch.wins, batch.mask)
            )
        return per_position.sum() / positions, plain
    per_move = move_losses(log_probs, batch, config)
    plain = per_move.sum()
    if config.gap_weight:
        weights = 1.0 + config.gap_weight * best_gaps(batch.wins, batch.mask)
        per_move = per_move * weights.unsqueeze(1)
    total = per_move.sum() / values
    if config.rank_weight:
        ranking = ranking_loss_sum(log_probs, batch.wins, batch.mask, config.rank_temperature)
        total = total + config.rank_weight * ranking / positions
    return total, plain

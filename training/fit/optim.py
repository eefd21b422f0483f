"""The optimiser side of training: AdamW groups, the learning-rate schedule, the weight EMA."""

from __future__ import annotations

import math

import torch

from oneply.training.fit.config import TrainConfig
from oneply.training.model.model import ActionValueModel


class EMA:
    """Exponential moving average of the weights (the ones exported and evaluated).

    The decay ramps up as min(decay, (1 + t) / (10 + t)) so that short runs are not dominated
    by the random initialisation.
    """

    def __init__(self, model: ActionValueModel, decay: float):
        self.decay = decay
        self.model = ActionValueModel(model.config).to(next(model.parameters()).device)
        self.model.load_state_dict(model.state_dict())
        self.model.eval().requires_grad_(False)

    @torch.no_grad()
    def update(self, model: torch.nn.Module, step: int) -> None:
        decay = min(self.decay, (1 + step) / (10 + step))
        ema: list[torch.Tensor] = list(self.model.parameters())
        torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 1.0 - decay)


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to min_lr_ratio·lr at the last step."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return config.lr * (config.min_lr_ratio + (1.0 - config.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, config: TrainConfig, fused: bool) -> torch.optim.AdamW:
    """AdamW; matrices and embeddings decay, LayerNorm gains, biases and BOS do not."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.95), fused=fused or None)

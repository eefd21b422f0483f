"""The action-value transformer, in two attention layouts that share one set of weights.

Input: a position's 77 state tokens and N candidate move ids. Output: for each move, log-probs
over K win-probability bins (REFERENCE.md §3-4).

``per_move`` (the paper's layout): one 79-token sequence [BOS, 77 state tokens, move] per
move, full attention, value read at the move token. N moves cost N sequences.

``shared``: one sequence [BOS, 77 state tokens, m1 … mN]. State tokens attend only to state
tokens, so the state is encoded once; each move token attends to the state tokens and to itself,
so its value never depends on the other moves. Cost ≈ (78 + N) tokens instead of 79·N.

Every move token sits at position 78 in both layouts, which is why one set of weights serves
both. Parameter names are the ONNX initializer names (see engine/graph.py), Linear weights
transposed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from engine.moves import NUM_MOVES
from engine.tokenizer import STATE_LENGTH, VOCAB_SIZE
from engine.values import NUM_BINS

LAYOUTS = ("shared", "per_move")
PREFIX = STATE_LENGTH + 1  # BOS + state tokens
SEQ_LENGTH = PREFIX + 1  # ... + one move


@dataclass(frozen=True)
class ModelConfig:
    layers: int
    heads: int
    width: int
    num_bins: int = NUM_BINS
    widening: int = 4

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(layers=2, heads=2, width=32),
    "small": ModelConfig(layers=4, heads=4, width=128),
    "9m": ModelConfig(layers=8, heads=8, width=256),
    "136m": ModelConfig(layers=8, heads=8, width=1024),
    "270m": ModelConfig(layers=16, heads=8, width=1024),
}


class SwiGLU(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.w13 = nn.Linear(width, 2 * hidden, bias=False)  # gate and up projections, fused
        self.w2 = nn.Linear(hidden, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.w13(x).chunk(2, dim=-1)
        return self.w2(F.silu(gate) * up)


class Block(nn.Module):
    """Pre-LayerNorm transformer block; attention and MLP without biases."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.ln1 = nn.LayerNorm(config.width)
        self.qkv = nn.Linear(config.width, 3 * config.width, bias=False)
        self.proj = nn.Linear(config.width, config.width, bias=False)
        self.ln2 = nn.LayerNorm(config.width)
        self.mlp = SwiGLU(config.width, config.widening * config.width)

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """[B, T, D] → q, k, v as [B, H, T, Dh]."""
        b, t, _ = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.config.heads, self.config.head_dim)
        return qkv.permute(2, 0, 3, 1, 4).unbind(0)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = x.shape
        return self.proj(x.transpose(1, 2).reshape(b, t, self.config.width))

    def forward_full(self, x: torch.Tensor) -> torch.Tensor:
        """Full attention over every token (per_move layout)."""
        q, k, v = self._heads(self.ln1(x))
        x = x + self._merge(F.scaled_dot_product_attention(q, k, v))
        return x + self.mlp(self.ln2(x))

    def forward_shared(self, xs: torch.Tensor, xm: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """State tokens xs [B, 78, D] attend to themselves; move tokens xm [B, N, D] attend to
        the state tokens and to themselves only."""
        qs, ks, vs = self._heads(self.ln1(xs))
        qm, km, vm = self._heads(self.ln1(xm))
        scale = 1.0 / math.sqrt(self.config.head_dim)
        state_out = F.scaled_dot_product_attention(qs, ks, vs)
        scores = torch.cat(
            [qm @ ks.transpose(-1, -2) * scale, (qm * km).sum(-1, keepdim=True) * scale], dim=-1
        )
        weights = scores.softmax(dim=-1)
        move_out = weights[..., :-1] @ vs + weights[..., -1:] * vm
        xs = xs + self._merge(state_out)
        xm = xm + self._merge(move_out)
        return xs + self.mlp(self.ln2(xs)), xm + self.mlp(self.ln2(xm))


class ActionValueModel(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        d = config.width
        self.state_embed = nn.Embedding(VOCAB_SIZE, d)
        self.move_embed = nn.Embedding(NUM_MOVES, d)
        self.bos = nn.Parameter(torch.zeros(d))
        self.pos_embed = nn.Parameter(torch.zeros(SEQ_LENGTH, d))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.final_ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, config.num_bins)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2 style scaled init of residual outputs
            if name.endswith(("proj.weight", "w2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _state(self, state: torch.Tensor) -> torch.Tensor:
        """[B, 77] tokens → [B, 78, D] embedded BOS + state, with positions."""
        bos = self.bos.expand(state.shape[0], 1, -1)
        return torch.cat([bos, self.state_embed(state)], dim=1) + self.pos_embed[:PREFIX]

    def _moves(self, moves: torch.Tensor) -> torch.Tensor:
        """[B, N] move ids (negative = padding) → [B, N, D] embedded moves at position 78."""
        return self.move_embed(moves.clamp(min=0)) + self.pos_embed[PREFIX]

    def forward(self, state: torch.Tensor, moves: torch.Tensor, layout: str = "shared"):
        """Log-probabilities [B, N, K] for every (position, move) pair.

        Padded move slots (id < 0) produce values that callers must ignore.
        """
        if layout == "shared":
            xs, xm = self._state(state), self._moves(moves)
            for block in self.blocks:
                xs, xm = block.forward_shared(xs, xm)
        elif layout == "per_move":
            b, n = moves.shape
            xs = self._state(state).unsqueeze(1).expand(b, n, PREFIX, -1).reshape(b * n, PREFIX, -1)
            x = torch.cat([xs, self._moves(moves).reshape(b * n, 1, -1)], dim=1)
            for block in self.blocks:
                x = block.forward_full(x)
            xm = x[:, -1].reshape(b, n, -1)
        else:
            raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
        return F.log_softmax(self.head(self.final_ln(xm)).float(), dim=-1)

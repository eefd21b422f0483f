"""The attention biases of engine/model/architecture.ATTENTION_FLAGS in torch: the board's geometry
stated in the attention scores (what each flag adds and why: engine/model/attention_bias.py, which
builds the same in ONNX operation by operation).

The weights hang off each block under the names the declaration gives (``blocks.{i}.square_bias``,
``blocks.{i}.smolgen.…``, ``blocks.{i}.move_from_bias``, ``blocks.{i}.move_to_bias``) and smolgen's
shared basis off the model (``smolgen_global``). They are made after every other weight: a model
with them draws the same initial weights as one without for everything else (the ablation table
compares like with like), and the tables start at zero, so at the start they change nothing but
their gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from oneply.engine.model.architecture import (
    SMOLGEN_COMPRESS,
    SMOLGEN_GEN,
    SMOLGEN_HIDDEN,
)
from oneply.engine.model.attention_bias import BOARD_START, MOVE_FROM_TOKEN, MOVE_TO_TOKEN


class Smolgen(nn.Module):
    """A per-head bias over the board's square pairs, made from the position (Lc0's smolgen)."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.compress = nn.Linear(width, SMOLGEN_COMPRESS, bias=False)
        self.dense = nn.Linear(64 * SMOLGEN_COMPRESS, SMOLGEN_HIDDEN, bias=False)
        self.ln = nn.LayerNorm(SMOLGEN_HIDDEN)
        self.gen = nn.Linear(SMOLGEN_HIDDEN, heads * SMOLGEN_GEN, bias=False)

    def forward(self, board: torch.Tensor, basis: nn.Linear) -> torch.Tensor:
        """Normalised board tokens [B, 64, D] → [B, H, 64, 64]."""
        b = board.shape[0]
        hidden = self.ln(F.silu(self.dense(self.compress(board).reshape(b, -1))))
        bias: torch.Tensor = basis(self.gen(hidden).view(b, self.heads, SMOLGEN_GEN))
        return bias.view(b, self.heads, 64, 64)


@dataclass
class Geometry:
    """What a forward pass shares across blocks: smolgen's basis and the board-token indices of
    the moves' from- and to-squares ([B, N] shared, [B·N] per_move; None without the flag)."""

    basis: nn.Linear | None = None
    move_from: torch.Tensor | None = None
    move_to: torch.Tensor | None = None


def add_parts(
    model: nn.Module, blocks: list[nn.Module], heads: int, width: int, flags: dict[str, bool]
) -> None:
    """Give `model` and its `blocks` the weights of the flags that are on (``flags``: the
    architecture's structure)."""
    for block in blocks:
        if flags["square_bias"]:
            block.square_bias = nn.Parameter(torch.zeros(heads, 64, 64))
        if flags["smolgen"]:
            smolgen = Smolgen(width, heads)
            for linear in (smolgen.compress, smolgen.dense, smolgen.gen):
                nn.init.normal_(linear.weight, std=0.02)
            block.smolgen = smolgen
        if flags["move_bias"]:
            block.move_from_bias = nn.Parameter(torch.zeros(heads, 64, 64))
            block.move_to_bias = nn.Parameter(torch.zeros(heads, 64, 64))
    if flags["smolgen"]:
        model.smolgen_global = nn.Linear(SMOLGEN_GEN, 64 * 64, bias=False)
        nn.init.zeros_(model.smolgen_global.weight)
    if flags["move_bias"]:
        model.register_buffer("move_from_token", torch.as_tensor(MOVE_FROM_TOKEN), persistent=False)
        model.register_buffer("move_to_token", torch.as_tensor(MOVE_TO_TOKEN), persistent=False)


def geometry(model: nn.Module, ids: torch.Tensor | None, flat: bool = False) -> Geometry:
    """The forward pass's shared parts for move ids `ids` [B, N] (clamped, after the flip)."""
    basis = getattr(model, "smolgen_global", None)
    shared = Geometry(basis if isinstance(basis, nn.Linear) else None)
    start, end = _table(model, "move_from_token"), _table(model, "move_to_token")
    if ids is None or start is None or end is None:
        return shared
    if flat:
        ids = ids.reshape(-1)
    shared.move_from, shared.move_to = start[ids], end[ids]
    return shared


def _table(module: nn.Module, name: str) -> torch.Tensor | None:
    """The module's tensor of that name (a bias table, an index buffer); None: flag off."""
    table = getattr(module, name, None)
    return table if isinstance(table, torch.Tensor) else None


def _pad(bias: torch.Tensor, before: tuple[int, int], after: tuple[int, int]) -> torch.Tensor:
    """Zero-pad the last two axes (rows, then columns, as the ONNX Pad does)."""
    return F.pad(bias, (before[1], after[1], before[0], after[0]))


def board_bias(block: nn.Module, normed: torch.Tensor, shared: Geometry) -> torch.Tensor | None:
    """Block's bias [1 or B, H, T, T] on the board tokens' pairs for a sequence whose normalised
    input is `normed` [B, T, D]; None without board flags."""
    square, smolgen = _table(block, "square_bias"), getattr(block, "smolgen", None)
    terms = [] if square is None else [square]
    if isinstance(smolgen, Smolgen):
        assert shared.basis is not None
        terms.append(smolgen(normed[:, BOARD_START : BOARD_START + 64], shared.basis))
    if not terms:
        return None
    bias = terms[0] if len(terms) == 1 else terms[0] + terms[1]
    tail = normed.shape[1] - BOARD_START - 64
    return _pad(bias, (BOARD_START, BOARD_START), (tail, tail))


def _move_rows(block: nn.Module, shared: Geometry) -> torch.Tensor | None:
    """[H, *, 64]: each move's from-square row plus its to-square row (None: no move bias)."""
    start, end = _table(block, "move_from_bias"), _table(block, "move_to_bias")
    if start is None or end is None or shared.move_from is None or shared.move_to is None:
        return None
    return start[:, shared.move_from] + end[:, shared.move_to]


def move_bias_shared(block: nn.Module, shared: Geometry, length: int) -> torch.Tensor | None:
    """Shared layout: [B, H, N, length] on the move tokens' scores (state tokens, then self)."""
    rows = _move_rows(block, shared)
    if rows is None:
        return None
    rows = rows.permute(1, 0, 2, 3)
    return _pad(rows, (0, BOARD_START), (0, length - BOARD_START - 64))


def full_bias(block: nn.Module, normed: torch.Tensor, shared: Geometry) -> torch.Tensor | None:
    """Full attention: the board bias plus, in a per_move sequence (one move token, last), that
    token's row towards the board tokens."""
    board, rows = board_bias(block, normed, shared), _move_rows(block, shared)
    if rows is None:
        return board
    length = normed.shape[1]
    rows = rows.permute(1, 0, 2).unsqueeze(2)  # [B·N, H, 1, 64]
    row = _pad(rows, (length - 1, BOARD_START), (0, length - BOARD_START - 64))
    return row if board is None else board + row

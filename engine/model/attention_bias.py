"""The attention biases of engine/model/architecture.ATTENTION_FLAGS as ONNX nodes
(format version 6).

Why they exist: attention over 77 state tokens knows nothing of the board's geometry; it must
learn from the data which of the 64×64 square pairs are a knight's jump, a diagonal or a file.
A bias on the scores of each pair of board tokens states it once per head (Lc0's and
Chessformer's experience: the biggest gain per parameter a chess transformer has had), and a
bias made from the position (smolgen) lets the pattern follow what stands on the board.

What gets a bias, and what does not:

* ``square_bias``: a learned table [heads, 64, 64] per layer, added to the scores of a board
  token attending to a board token. BOS, the side, castling, en-passant and clock tokens and the
  move token get none: they have no square, and a learned row for each would be a positional
  embedding the model already has.
* ``smolgen``: per layer, the normalised board tokens (what the layer's q/k/v read) are squeezed
  (D → SMOLGEN_COMPRESS each, 64 of them → SMOLGEN_HIDDEN, SiLU, LayerNorm), a linear map gives
  per head SMOLGEN_GEN coefficients, and one learned basis [SMOLGEN_GEN, 64·64] shared by every
  layer turns them into a [heads, 64, 64] bias on the same pairs. A few hundred thousand
  multiply-adds a layer: about 2% of a small model's layer.
* ``move_bias`` (action values): per layer, two learned tables [heads, 64, 64]; the move token's
  scores towards the 64 board tokens get the row of its from-square in one and the row of its
  to-square in the other — where the moved piece stands, where it lands, and the squares that
  matter from there. Its score towards itself and the other state tokens get none.

Rows and columns of every table are the board tokens in sequence order (engine/facts/tokenizer.py,
rank 8 first), so with ``mirror`` a table speaks of the side to move's board.
training/model/attention.py is the same in torch, operation by operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from oneply.engine.facts.moves import MOVE_FROM, MOVE_TO
from oneply.engine.facts.tokenizer import SQUARE_TOKEN
from oneply.engine.model.architecture import SMOLGEN_GEN

if TYPE_CHECKING:
    from oneply.engine.model.graph import _Graph

#: sequence position of the first board token (after BOS and the side-to-move token)
BOARD_START = 1 + int(SQUARE_TOKEN.min())
#: per move id: the board-token index (0 … 63) of its from-square and of its to-square
MOVE_FROM_TOKEN = (SQUARE_TOKEN[MOVE_FROM] - SQUARE_TOKEN.min()).astype(np.int64)
MOVE_TO_TOKEN = (SQUARE_TOKEN[MOVE_TO] - SQUARE_TOKEN.min()).astype(np.int64)


class AttentionBias:
    """The bias nodes of one model's graph: built per layer from the flags it has on."""

    def __init__(self, g: _Graph, parts: Mapping[str, Any], heads: int):
        self.g = g
        self.square_bias = bool(parts["square_bias"])
        self.smolgen = bool(parts["smolgen"])
        self.move_bias = bool(parts["move_bias"])
        self.heads = heads
        #: [B, N] (shared) or [B·N] (per_move) board-token indices of the moves' squares
        self.move_from: str | None = None
        self.move_to: str | None = None

    def set_moves(self, moves: str, flat: bool) -> None:
        """Index the moves' from- and to-square tokens (after the side-to-move flip); `flat`:
        one sequence per move (per_move)."""
        if not self.move_bias:
            return
        g = self.g
        ids = g.op("Max", moves, g.const(0))  # a padded slot reads id 0; its output is ignored
        if flat:
            ids = g.op("Reshape", ids, g.const([-1]))
        self.move_from = g.op("Gather", g.const(MOVE_FROM_TOKEN), ids)
        self.move_to = g.op("Gather", g.const(MOVE_TO_TOKEN), ids)

    def _pad(self, bias: str, rank: int, before: list[int], after: list[int]) -> str:
        """Zero-pad the last two axes of a rank-`rank` tensor."""
        lead = [0] * (rank - 2)
        return self.g.op("Pad", bias, self.g.const(lead + before + lead + after))

    def board(self, normed: str, layer: int, length: int) -> str | None:
        """Block `layer`'s bias [1 or B, heads, length, length] for a sequence of `length`
        tokens whose normalised input is `normed` [B, length, D]; None without board flags."""
        g, p = self.g, f"blocks.{layer}"
        terms = [f"{p}.square_bias"] if self.square_bias else []  # [H, 64, 64]
        if self.smolgen:
            board = g.op(
                "Slice", normed, g.const([BOARD_START]), g.const([BOARD_START + 64]), g.const([1])
            )
            squeezed = g.op("MatMul", board, f"{p}.smolgen.compress.weight")  # [B, 64, C]
            hidden = g.op(
                "MatMul", g.op("Reshape", squeezed, g.const([0, -1])), f"{p}.smolgen.dense.weight"
            )
            hidden = g.op("Mul", hidden, g.op("Sigmoid", hidden))
            hidden = g.op(
                "LayerNormalization",
                hidden,
                f"{p}.smolgen.ln.weight",
                f"{p}.smolgen.ln.bias",
                epsilon=1e-5,
            )
            gen = g.op("MatMul", hidden, f"{p}.smolgen.gen.weight")  # [B, H·G]
            gen = g.op("Reshape", gen, g.const([0, self.heads, SMOLGEN_GEN]))
            made = g.op("MatMul", gen, "smolgen_global.weight")  # [B, H, 4096]
            terms.append(g.op("Reshape", made, g.const([0, self.heads, 64, 64])))
        if not terms:
            return None
        bias = terms[0] if len(terms) == 1 else g.op("Add", *terms)
        rank = 4 if self.smolgen else 3
        tail = length - BOARD_START - 64
        return self._pad(bias, rank, [BOARD_START] * 2, [tail] * 2)

    def _move_rows(self, layer: int) -> str:
        """[H, *, 64]: each move's from-square row plus its to-square row."""
        g, p = self.g, f"blocks.{layer}"
        assert self.move_from is not None and self.move_to is not None
        start = g.op("Gather", f"{p}.move_from_bias", self.move_from, axis=1)
        end = g.op("Gather", f"{p}.move_to_bias", self.move_to, axis=1)
        return g.op("Add", start, end)

    def moves_shared(self, layer: int, length: int) -> str | None:
        """Shared layout: the bias [B, H, N, length] on the move tokens' scores towards the
        state tokens and themselves (the last of `length` columns); None without move_bias."""
        if not self.move_bias:
            return None
        rows = self.g.op("Transpose", self._move_rows(layer), perm=[1, 0, 2, 3])  # [B, H, N, 64]
        return self._pad(rows, 4, [0, BOARD_START], [0, length - BOARD_START - 64])

    def move_row(self, layer: int, length: int) -> str | None:
        """per_move layout: the bias [B·N, H, length, length] of the last token (the move)
        towards the board tokens; None without move_bias."""
        if not self.move_bias:
            return None
        g = self.g
        rows = g.op("Transpose", self._move_rows(layer), perm=[1, 0, 2])  # [B·N, H, 64]
        rows = g.op("Unsqueeze", rows, g.const([2]))  # [B·N, H, 1, 64]
        return self._pad(rows, 4, [length - 1, BOARD_START], [0, length - BOARD_START - 64])

    def full(self, normed: str, layer: int, length: int) -> str | None:
        """Full attention (per_move, sv, bc): the board bias plus, where the sequence ends in a
        move token, that token's row."""
        board = self.board(normed, layer, length)
        row = self.move_row(layer, length) if self.move_from is not None else None
        if board is None or row is None:
            return board if row is None else row
        return self.g.op("Add", board, row)

"""The action-value transformer, in two attention layouts that share one set of weights.

Input: a position's 77 state tokens and N candidate move ids. Output: for each move, log-probs
over K win-probability bins (docs/FORMAT.md §3-4).

``per_move`` (the paper's layout): one 79-token sequence [BOS, 77 state tokens, move] per
move, full attention, value read at the move token. N moves cost N sequences.

``shared``: one sequence [BOS, 77 state tokens, m1 … mN]. State tokens attend only to state
tokens, so the state is encoded once; each move token attends to the state tokens and to itself,
so its value never depends on the other moves. Cost ≈ (78 + N) tokens instead of 79·N.

Every move token sits at position 78 in both layouts, which is why one set of weights serves
both.

The move token (``move_features``): besides its opaque id embedding, it gets embeddings of its
from-square, to-square and promotion piece, plus — through one linear map each — the embedding
of the state tokens standing on its from- and to-squares (what it moves and what it takes).
Without them the network must discover board geometry from 1968 unrelated ids before it can
learn any chess, which takes far more samples than a CPU can afford; with them a move "knows"
the squares it touches from the first step. It is all computed inside the graph from the same
inputs (state tokens, move ids), so the ONNX contract is unchanged.

With ``mirror`` the network sees every position from the side to move: where black is to move,
the state tokens and move ids are replaced by those of the colour-flipped twin (white to move,
engine/model/mirror.py) before anything else, so one set of patterns serves both colours. Each move
keeps its slot, so the output still lines up with the real moves.

With ``features`` the network also reads what a player sees at a glance (engine/facts/features.py):
per board square, how many pieces of each side attack it and whether a piece there is pinned;
per move, what it takes, whether it checks, and who attacks and defends its destination
afterwards. Each fact is a small integer; one embedding table per kind (squares, moves) holds
a block of rows per fact, and a token gets the sum of its facts' rows. The tables start at zero,
so a model warm-started from one without them computes exactly what its source computes.

With ``predictor`` ``sv`` (state value) or ``bc`` (behavioural cloning), the paper's two other
predictors, the model reads the state alone — [BOS, 77 state tokens], full attention — and its
head reads the last state token: ``sv`` gives K value bins for the position (side to move),
``bc`` one logit per move id, of which the moves asked about (the legal ones) are picked and
log-softmaxed. Neither has a move token, so move ids, move features and move facts are not
part of them (engine/model/architecture.py).

With ``square_bias``, ``smolgen`` and ``move_bias`` (engine/model/architecture.ATTENTION_FLAGS,
training/model/attention.py) the attention scores get the board's geometry: a learned bias per pair
of board squares, one made from the position, and the move token's towards the squares around
its from- and to-square.

Parameter names are the ONNX initializer names (see engine/model/graph.py), Linear weights
transposed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from oneply.engine.facts.features import (
    ADOPTED_FACTS,
    MOVE_FACTS,
    SQUARE_FACTS,
    SQUARE_NAMES,
    TOKEN_SQUARE,
    channels,
    check_names,
    table_offsets,
)
from oneply.engine.facts.moves import (
    MOVE_FROM,
    MOVE_PROMOTION,
    MOVE_TO,
    NUM_MOVES,
    NUM_PROMOTIONS,
)
from oneply.engine.facts.tokenizer import FIELDS, SQUARE_TOKEN, STATE_LENGTH, VOCAB_SIZE
from oneply.engine.model.architecture import (
    ATTENTION_FLAGS,
    PAD_LOGIT,
    PREDICTORS,
    SEQ_LENGTH,
    STATE_SEQ_LENGTH,
    check_weights,
    linear_names,
    structure,
)
from oneply.engine.model.mirror import BLACK_TOKEN, IN_MODEL_TABLES
from oneply.engine.model.values import NUM_BINS
from oneply.training.model import attention
from oneply.training.model.attention import Geometry

LAYOUTS = ("shared", "per_move")
PREFIX = STATE_LENGTH + 1  # BOS + state tokens
#: sequence position of the first board token (after BOS and the side-to-move token)
BOARD_START = 1 + int(SQUARE_TOKEN.min())


@dataclass(frozen=True)
class ModelConfig:
    layers: int
    heads: int
    width: int
    num_bins: int = NUM_BINS
    widening: int = 4
    #: square, promotion and piece features on the move token (False: the id alone, format 1)
    move_features: bool = False
    #: with move_features: the state tokens on the move's squares too (False: squares only; an
    #: ablation of the sample-efficiency table, not a shipped variant)
    piece_features: bool = True
    #: the board seen from the side to move (mirrored for black), done inside the graph from the
    #: same inputs (engine/model/mirror.py; files that use it are format version 3)
    mirror: bool = False
    #: the hand-computed facts the network reads (engine/facts/features.py names; empty: none, files
    #: that read some are format version 4)
    features: tuple[str, ...] = ()
    #: what it predicts (engine/model/architecture.PREDICTORS): ``av`` action values, ``sv`` the
    #: position's value, ``bc`` a move distribution; sv and bc files are format version 5
    predictor: str = "av"
    #: attention biases (engine/model/architecture.ATTENTION_FLAGS; files with any are format 6): a
    #: learned one per pair of board squares, one made from the position (smolgen), and the
    #: move token's towards the squares seen from its from- and to-square (action values only)
    square_bias: bool = False
    smolgen: bool = False
    move_bias: bool = False

    def __post_init__(self) -> None:  # JSON gives a list, in any order: one canonical tuple
        object.__setattr__(self, "features", check_names(self.features))
        if self.predictor not in PREDICTORS:
            raise ValueError(f"unknown predictor {self.predictor!r}; expected one of {PREDICTORS}")
        if self.predictor != "av":  # no move token: the move options do not apply
            object.__setattr__(self, "move_features", False)
            object.__setattr__(self, "move_bias", False)
            squares = tuple(f for f in self.features if f in SQUARE_NAMES)
            object.__setattr__(self, "features", squares)

    @property
    def square_fact_channels(self) -> list[int]:
        """Channels of the ``square_facts`` input this model reads."""
        return channels(self.features, SQUARE_FACTS)

    @property
    def move_fact_channels(self) -> list[int]:
        """Channels of the ``move_facts`` input this model reads."""
        return channels(self.features, MOVE_FACTS)

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    def to_dict(self) -> dict[str, Any]:
        """The fields; ``predictor`` only when it is not ``av`` and the attention flags only
        when on, so a model without them has the config (checkpoints, file metadata) it had
        before they existed."""
        values = asdict(self)
        if self.predictor == "av":
            del values["predictor"]
        for name in ATTENTION_FLAGS:
            if not values[name]:
                del values[name]
        return values


#: every preset has move features, the side-to-move view and the facts of engine/facts/features.py:
#: they won the sample-efficiency tables (docs/studies/README.md); the ablation sets them
#: off per row
_ADOPTED: dict[str, Any] = {"move_features": True, "mirror": True, "features": ADOPTED_FACTS}
PRESETS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(layers=2, heads=2, width=32, **_ADOPTED),
    "small": ModelConfig(layers=4, heads=4, width=128, **_ADOPTED),
    "medium": ModelConfig(layers=6, heads=6, width=192, **_ADOPTED),  # 4.1M: the size sweep's
    "9m": ModelConfig(layers=8, heads=8, width=256, **_ADOPTED),
    "136m": ModelConfig(layers=8, heads=8, width=1024, **_ADOPTED),
    "270m": ModelConfig(layers=16, heads=8, width=1024, **_ADOPTED),
}


class SwiGLU(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.w13 = nn.Linear(width, 2 * hidden, bias=False)  # gate and up projections, fused
        self.w2 = nn.Linear(hidden, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.w13(x).chunk(2, dim=-1)
        out: torch.Tensor = self.w2(F.silu(gate) * up)
        return out


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
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = x.shape
        merged: torch.Tensor = self.proj(x.transpose(1, 2).reshape(b, t, self.config.width))
        return merged

    def forward_full(self, x: torch.Tensor, shared: Geometry | None = None) -> torch.Tensor:
        """Full attention over every token (per_move layout, sv and bc)."""
        normed = self.ln1(x)
        q, k, v = self._heads(normed)
        bias = attention.full_bias(self, normed, shared) if shared else None
        x = x + self._merge(F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
        out: torch.Tensor = x + self.mlp(self.ln2(x))
        return out

    def forward_shared(
        self, xs: torch.Tensor, xm: torch.Tensor, shared: Geometry | None = None
    ) -> tuple[torch.Tensor, ...]:
        """State tokens xs [B, 78, D] attend to themselves; move tokens xm [B, N, D] attend to
        the state tokens and to themselves only."""
        normed = self.ln1(xs)
        qs, ks, vs = self._heads(normed)
        qm, km, vm = self._heads(self.ln1(xm))
        scale = 1.0 / math.sqrt(self.config.head_dim)
        board = attention.board_bias(self, normed, shared) if shared else None
        state_out = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=board)
        scores = torch.cat(
            [qm @ ks.transpose(-1, -2) * scale, (qm * km).sum(-1, keepdim=True) * scale], dim=-1
        )
        move_bias = attention.move_bias_shared(self, shared, PREFIX + 1) if shared else None
        if move_bias is not None:
            scores = scores + move_bias
        weights = scores.softmax(dim=-1)
        move_out = weights[..., :-1] @ vs + weights[..., -1:] * vm
        xs = xs + self._merge(state_out)
        xm = xm + self._merge(move_out)
        return xs + self.mlp(self.ln2(xs)), xm + self.mlp(self.ln2(xm))


class ActionValueModel(nn.Module):
    # buffers (register_buffer), declared for the type checker; only with move_features
    move_from: torch.Tensor
    move_to: torch.Tensor
    move_promotion: torch.Tensor
    square_token: torch.Tensor
    # only with mirror (engine/model/mirror.py)
    castling_bit: torch.Tensor
    state_source: torch.Tensor
    state_map: torch.Tensor
    state_map_offset: torch.Tensor
    mirror_move: torch.Tensor
    # only with features (engine/facts/features.py): the tables and their buffers
    square_fact_embed: nn.Embedding
    move_fact_embed: nn.Embedding
    square_channels: torch.Tensor
    square_offsets: torch.Tensor
    token_square: torch.Tensor
    move_channels: torch.Tensor
    move_offsets: torch.Tensor

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        d = config.width
        action_value = config.predictor == "av"
        self.state_embed = nn.Embedding(VOCAB_SIZE, d)
        if action_value:
            self.move_embed = nn.Embedding(NUM_MOVES, d)
        self.bos = nn.Parameter(torch.zeros(d))
        # initialised like the embeddings: at zero every position looks the same at the start
        length = SEQ_LENGTH if action_value else STATE_SEQ_LENGTH
        self.pos_embed = nn.Parameter(torch.randn(length, d) * 0.02)
        if config.move_features:
            self.from_embed = nn.Embedding(64, d)
            self.to_embed = nn.Embedding(64, d)
            self.promo_embed = nn.Embedding(NUM_PROMOTIONS, d)
            if config.piece_features:
                self.from_piece = nn.Linear(d, d, bias=False)
                self.to_piece = nn.Linear(d, d, bias=False)
            for name, table in (
                ("move_from", MOVE_FROM),
                ("move_to", MOVE_TO),
                ("move_promotion", MOVE_PROMOTION),
                ("square_token", SQUARE_TOKEN),
            ):
                self.register_buffer(name, torch.as_tensor(table), persistent=False)
        if config.mirror:
            for name, table in IN_MODEL_TABLES.items():
                self.register_buffer(name, torch.as_tensor(table), persistent=False)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.final_ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, NUM_MOVES if config.predictor == "bc" else config.num_bins)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2 style scaled init of residual outputs
            if name.endswith(("proj.weight", "w2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.layers))
        self._fact_tables(config)
        attention.add_parts(self, list(self.blocks), config.heads, d, structure(config.to_dict()))
        # the one declaration (engine/model/architecture.py)
        linear = linear_names(config.to_dict())
        check_weights(
            config.to_dict(),
            {n: tuple(t.shape)[:: -1 if n in linear else 1] for n, t in self.state_dict().items()},
        )

    def _fact_tables(self, config: ModelConfig) -> None:
        """One embedding table per kind of fact it reads, a block of rows per fact.

        Made last and at zero: the other weights draw the same random numbers with or without
        them (the sample-efficiency table compares like with like), and a model warm-started
        from one without them computes exactly what its source computes.
        """
        kinds = (
            ("square", SQUARE_FACTS, config.square_fact_channels),
            ("move", MOVE_FACTS, config.move_fact_channels),
        )
        for kind, declared, picked in kinds:
            if not picked:
                continue
            offsets, rows = table_offsets(config.features, declared)
            table = nn.Embedding(rows, config.width)
            nn.init.zeros_(table.weight)
            setattr(self, f"{kind}_fact_embed", table)
            self.register_buffer(f"{kind}_channels", torch.tensor(picked), persistent=False)
            self.register_buffer(f"{kind}_offsets", torch.as_tensor(offsets), persistent=False)
        if config.square_fact_channels:
            self.register_buffer("token_square", torch.as_tensor(TOKEN_SQUARE), persistent=False)

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

    def _mirror(
        self, state: torch.Tensor, moves: torch.Tensor, black: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows with black to move ([B, 1] `black`) → the colour-flipped position and moves
        (engine/model/mirror.py); white rows unchanged. Padded slots of black rows get a real id:
        their output is ignored as before."""
        flipped_moves = self.mirror_move[moves.clamp(min=0)]
        return self._mirror_state(state, black), torch.where(black, flipped_moves, moves)

    def _mirror_state(self, state: torch.Tensor, black: torch.Tensor) -> torch.Tensor:
        code = self.castling_bit[state[:, FIELDS["castling"]]].sum(1, keepdim=True)
        extended = torch.cat([state, code], dim=1)
        flipped = self.state_map[extended[:, self.state_source] + self.state_map_offset]
        return torch.where(black, flipped, state)

    def _state(
        self, state: torch.Tensor, square_facts: torch.Tensor | None, black: torch.Tensor | None
    ) -> torch.Tensor:
        """[B, 77] tokens → [B, 78, D] embedded BOS + state, with positions (and, with square
        facts, each board token plus its square's facts; turned over with the board for
        `black` rows)."""
        bos = self.bos.expand(state.shape[0], 1, -1)
        x = torch.cat([bos, self.state_embed(state)], dim=1) + self.pos_embed[:PREFIX]
        if not self.config.square_fact_channels:
            return x
        if square_facts is None:
            raise ValueError("this model reads square facts: pass square_facts [B, 64, S]")
        squares = self.token_square.expand(state.shape[0], -1)  # [B, 64] in token order
        if black is not None:
            squares = torch.where(black, squares ^ 56, squares)  # engine/model/mirror.mirror_square
        facts = square_facts[:, :, self.square_channels]  # [B, 64, s]
        facts = facts.gather(1, squares.unsqueeze(-1).expand(-1, -1, facts.shape[-1]))
        embedded = self.square_fact_embed(facts + self.square_offsets).sum(2)  # [B, 64, D]
        start, stop = BOARD_START, BOARD_START + 64
        return torch.cat([x[:, :start], x[:, start:stop] + embedded, x[:, stop:]], dim=1)

    def _moves(
        self, state: torch.Tensor, moves: torch.Tensor, move_facts: torch.Tensor | None
    ) -> torch.Tensor:
        """[B, N] move ids (negative = padding) → [B, N, D] embedded moves at position 78."""
        ids = moves.clamp(min=0)
        x: torch.Tensor = self.move_embed(ids) + self.pos_embed[PREFIX]
        if self.config.move_fact_channels:
            if move_facts is None:
                raise ValueError("this model reads move facts: pass move_facts [B, N, M]")
            facts = move_facts[:, :, self.move_channels] + self.move_offsets
            x = x + self.move_fact_embed(facts).sum(2)
        if not self.config.move_features:
            return x
        start, end = self.move_from[ids], self.move_to[ids]
        x = x + self.from_embed(start) + self.to_embed(end)
        x = x + self.promo_embed(self.move_promotion[ids])
        if not self.config.piece_features:
            return x
        on_start = state.gather(1, self.square_token[start])  # [B, N] token on the from-square
        on_end = state.gather(1, self.square_token[end])
        pieces: torch.Tensor = self.from_piece(self.state_embed(on_start)) + self.to_piece(
            self.state_embed(on_end)
        )
        return x + pieces

    def typed_blocks(self) -> list[Block]:
        """The blocks, typed (iterating a ModuleList yields plain Modules)."""
        return [cast(Block, block) for block in self.blocks]

    def forward(
        self,
        state: torch.Tensor,
        moves: torch.Tensor | None,
        layout: str = "shared",
        square_facts: torch.Tensor | None = None,
        move_facts: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Log-probabilities [B, N, K] for every (position, move) pair.

        Padded move slots (id < 0) produce values that callers must ignore. A model with
        ``features`` needs the facts of engine/facts/features.py for the real position and moves.

        ``sv``: [B, K] for each position (`moves` unused, may be None; no layout). ``bc``:
        [B, N] log-probabilities of the given moves among themselves (padded slots get none).
        """
        if self.config.predictor != "av":
            return self._forward_state(state, moves, square_facts)
        assert moves is not None, "an action-value model scores moves: pass them"
        black = None
        if self.config.mirror:
            black = state[:, FIELDS["side"]] == BLACK_TOKEN  # [B, 1]
            state, moves = self._mirror(state, moves, black)
        xs = self._state(state, square_facts, black)
        xm = self._moves(state, moves, move_facts)
        ids = moves.clamp(min=0)
        if layout == "shared":
            shared = attention.geometry(self, ids)
            for block in self.typed_blocks():
                xs, xm = block.forward_shared(xs, xm, shared)
        elif layout == "per_move":
            b, n = moves.shape
            xs = xs.unsqueeze(1).expand(b, n, PREFIX, -1).reshape(b * n, PREFIX, -1)
            x = torch.cat([xs, xm.reshape(b * n, 1, -1)], dim=1)
            shared = attention.geometry(self, ids, flat=True)
            for block in self.typed_blocks():
                x = block.forward_full(x, shared)
            xm = x[:, -1].reshape(b, n, -1)
        else:
            raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
        return F.log_softmax(self.head(self.final_ln(xm)).float(), dim=-1)

    def _forward_state(
        self, state: torch.Tensor, moves: torch.Tensor | None, square_facts: torch.Tensor | None
    ) -> torch.Tensor:
        """sv and bc: [BOS, state] with full attention, the head on the last state token."""
        black = None
        if self.config.mirror:
            black = state[:, FIELDS["side"]] == BLACK_TOKEN  # [B, 1]
            state = self._mirror_state(state, black)
        x = self._state(state, square_facts, black)
        shared = attention.geometry(self, None)
        for block in self.typed_blocks():
            x = block.forward_full(x, shared)
        out = self.head(self.final_ln(x[:, -1])).float()  # [B, K] or [B, NUM_MOVES]
        if self.config.predictor == "sv":
            return F.log_softmax(out, dim=-1)
        if moves is None:
            raise ValueError("a bc model ranks the moves it is given: pass them")
        ids = moves.clamp(min=0)
        if black is not None:  # the head speaks of the flipped board's moves
            ids = torch.where(black, self.mirror_move[ids], ids)
        logits = out.gather(1, ids).masked_fill(moves < 0, PAD_LOGIT)
        return F.log_softmax(logits, dim=-1)

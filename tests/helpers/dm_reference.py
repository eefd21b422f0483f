"""DeepMind's searchless_chess models (action value, state value, behavioural cloning),
restated in JAX/haiku for the import tests.

The real checkpoints cannot be downloaded here, so tests/training/test_dm_import.py builds
checkpoints with exactly their structure — the same haiku modules created in the same order
(hence the same parameter names and shapes), saved by orbax's CheckpointManager in the layout their
training writes (``<model>/<step>/params``) — fills them with random values, and compares the
imported ONNX file with this forward pass.

Written from their public sources (src/transformer.py, src/tokenizer.py, src/utils.py,
src/engines/constants.py and neural_engines.py), as the published engines configure them:
learned positions, no causal mask, final LayerNorm, no QK-LayerNorm, 128 return buckets, one
embedding table of 1968 rows for state characters and actions, positions for 79 tokens
whatever the policy (their engines build every policy with max_sequence_length 79); the head
has 128 outputs (action and state value) or 1968 (behavioural cloning). Their tokenizer and action
vocabulary are restated too, in their own way of computing them, so the test can check ours
against them.
"""

from __future__ import annotations

import math
from pathlib import Path

import chess
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

NUM_ACTIONS = 1968
NUM_BUCKETS = 128
MAX_SEQUENCE = 79
STEP = 6_400_000


class MultiHeadDotProductAttention(hk.Module):
    """Their attention module (the class name gives haiku's module name): separate q, k, v and
    output projections without bias, 1/√(head width) scaling, no mask."""

    def __init__(self, heads: int, head_width: int):
        super().__init__()
        self.heads, self.head_width = heads, head_width

    def __call__(self, x: jax.Array) -> jax.Array:
        batch, length, width = x.shape
        hidden = self.heads * self.head_width
        split = (batch, length, self.heads, self.head_width)
        q = hk.Linear(hidden, with_bias=False)(x).reshape(split)
        k = hk.Linear(hidden, with_bias=False)(x).reshape(split)
        v = hk.Linear(hidden, with_bias=False)(x).reshape(split)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_width)
        mixed = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(logits, axis=-1), v)
        return hk.Linear(width, with_bias=False)(mixed.reshape(batch, length, hidden))


def _norm(x: jax.Array) -> jax.Array:
    return hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)


def _forward(
    targets: jax.Array, layers: int, heads: int, width: int, outputs: int = NUM_BUCKETS
) -> jax.Array:
    """Log-probabilities [B, T, outputs] for target sequences [B, T] (shifted right by one, so
    the first input is token 0)."""
    inputs = jnp.concatenate([jnp.zeros_like(targets[:, :1]), targets[:, :-1]], axis=1)
    tokens = hk.Embed(
        NUM_ACTIONS,
        width,
        lookup_style=hk.EmbedLookupStyle.ARRAY_INDEX,
        w_init=hk.initializers.TruncatedNormal(stddev=0.02),
    )(inputs)
    h = tokens * jnp.sqrt(width) + hk.Embed(MAX_SEQUENCE, width)(jnp.arange(inputs.shape[1]))
    for _ in range(layers):
        h = h + MultiHeadDotProductAttention(heads, width // heads)(_norm(h))
        x = _norm(h)
        gate = hk.Linear(4 * width, with_bias=False)(x)
        up = hk.Linear(4 * width, with_bias=False)(x)
        h = h + hk.Linear(width, with_bias=False)(jax.nn.silu(gate) * up)
    return jax.nn.log_softmax(hk.Linear(outputs)(_norm(h)), axis=-1)


def transformed(layers: int, heads: int, width: int, outputs: int = NUM_BUCKETS) -> hk.Transformed:
    """Their transformer; `outputs` NUM_ACTIONS for a behavioural-cloning model."""
    return hk.transform(lambda targets: _forward(targets, layers, heads, width, outputs))


def param_shapes(
    layers: int, heads: int, width: int, outputs: int = NUM_BUCKETS
) -> dict[str, tuple[int, ...]]:
    """Their "module/param" → shape, without allocating the model (any size, 270M too)."""
    tree = jax.eval_shape(
        transformed(layers, heads, width, outputs).init,
        jax.random.PRNGKey(1),
        np.ones((1, 1), np.int32),
    )
    return {f"{m}/{p}": tuple(a.shape) for m, ps in tree.items() for p, a in ps.items()}


def random_params(
    layers: int, heads: int, width: int, seed: int, outputs: int = NUM_BUCKETS
) -> dict:
    """Their initialisation, then every LayerNorm and the head bias moved off 1 / 0, so that
    every parameter of the checkpoint matters."""
    params = transformed(layers, heads, width, outputs).init(
        jax.random.PRNGKey(seed), np.ones((1, 1), np.int32)
    )
    rng = np.random.default_rng(seed)
    out: dict = {}
    for module, leaves in params.items():
        out[module] = {}
        for name, value in leaves.items():
            value = np.asarray(value)
            if name == "scale":
                value = 1.0 + 0.2 * rng.standard_normal(value.shape)
            elif name in ("offset", "b"):
                value = 0.2 * rng.standard_normal(value.shape)
            out[module][name] = jnp.asarray(value, dtype=jnp.float32)
    return out


def save_checkpoint(model_dir: Path, params: dict, params_ema: dict, step: int = STEP) -> Path:
    """Save as their training does (orbax CheckpointManager items), → model_dir/step/params."""
    manager = ocp.CheckpointManager(model_dir.resolve(), item_names=("params", "params_ema"))
    manager.save(
        step,
        args=ocp.args.Composite(
            params=ocp.args.StandardSave(params), params_ema=ocp.args.StandardSave(params_ema)
        ),
    )
    manager.wait_until_finished()
    manager.close()
    return model_dir / str(step) / "params"


# --- their tokenizer and action vocabulary, computed their way ------------------------------

_CHARACTERS = "0123456789abcdefghpnrkqPBNRQKw."


def dm_tokenize(fen: str) -> np.ndarray:
    """FEN → 77 tokens: their field-by-field rule (digits become that many '.')."""
    board, side, castling, en_passant, halfmoves, fullmoves = fen.split(" ")
    text = side + "".join("." * int(c) if c.isdigit() else c for c in board.replace("/", ""))
    text += ("" if castling == "-" else castling).ljust(4, ".")
    text += ".." if en_passant == "-" else en_passant
    text += halfmoves.ljust(3, ".") + fullmoves.ljust(3, ".")
    assert len(text) == 77, fen
    return np.array([_CHARACTERS.index(c) for c in text], dtype=np.int64)


def dm_actions() -> list[str]:
    """Their 1968 moves: per square, a queen's then a knight's attacks on an empty board (as
    python-chess lists them), then the promotions."""
    board = chess.BaseBoard.empty()
    moves = []
    for square in range(64):
        targets = []
        for symbol in "QN":
            board.set_piece_at(square, chess.Piece.from_symbol(symbol))
            targets += list(board.attacks(square))
        board.remove_piece_at(square)
        moves += [chess.square_name(square) + chess.square_name(t) for t in targets]
    files = "abcdefgh"
    for rank, next_rank in (("2", "1"), ("7", "8")):
        for i, file in enumerate(files):
            ends = [file] + ([files[i - 1]] if i > 0 else []) + ([files[i + 1]] if i < 7 else [])
            moves += [f"{file}{rank}{end}{next_rank}{p}" for end in ends for p in "qrbn"]
    return moves


def bucket_values() -> np.ndarray:
    """Their return-bucket values: midpoints of uniform buckets on [0, 1]."""
    edges = np.linspace(0.0, 1.0, NUM_BUCKETS + 1)
    return (edges[:-1] + edges[1:]) / 2


def reference_wins(params: dict, layers: int, heads: int, width: int, board: chess.Board):
    """Their action-value engine's win probability per legal move (uci → win): one sequence
    [state, action, dummy bucket] per move, log-probs read at the last position."""
    actions = {m: i for i, m in enumerate(dm_actions())}
    legal = [m.uci() for m in board.legal_moves]
    state = dm_tokenize(board.fen())
    sequences = np.stack([np.concatenate([state, [actions[m], 0]]) for m in legal]).astype(np.int32)
    apply = jax.jit(transformed(layers, heads, width).apply)
    log_probs = np.asarray(apply(params, None, sequences))[:, -1]
    wins = np.exp(log_probs.astype(np.float64)) @ bucket_values()
    return dict(zip(legal, wins, strict=True))


def reference_state_values(params: dict, layers: int, heads: int, width: int, boards) -> np.ndarray:
    """Their state-value engine's win probability of each position for its side to move: one
    sequence [state, dummy bucket] per position, log-probs read at the last position."""
    states = np.stack([dm_tokenize(board.fen()) for board in boards])
    sequences = np.concatenate([states, np.zeros((len(boards), 1), np.int64)], 1).astype(np.int32)
    apply = jax.jit(transformed(layers, heads, width).apply)
    log_probs = np.asarray(apply(params, None, sequences))[:, -1]
    return np.exp(log_probs.astype(np.float64)) @ bucket_values()


def reference_policy(params: dict, layers: int, heads: int, width: int, board: chess.Board):
    """Their behavioural-cloning engine's probability per legal move (uci → p): one sequence
    [state, dummy action], the action log-probs at the last position renormalised over the
    legal moves."""
    actions = {m: i for i, m in enumerate(dm_actions())}
    legal = [m.uci() for m in board.legal_moves]
    sequence = np.concatenate([dm_tokenize(board.fen()), [0]])[None].astype(np.int32)
    apply = jax.jit(transformed(layers, heads, width, NUM_ACTIONS).apply)
    log_probs = np.asarray(apply(params, None, sequence))[0, -1].astype(np.float64)
    picked = log_probs[[actions[m] for m in legal]]
    probs = np.exp(picked - picked.max())
    return dict(zip(legal, probs / probs.sum(), strict=True))

"""The network's parameters, declared once: names, shapes, and which config flag adds which.

Why: the architecture is built twice — in torch for training (training/model/model.py) and as an
ONNX graph for inference (engine/model/graph.py) — and the two must hold exactly the same weights.
This table is the one statement of what those weights are. The torch model checks itself
against it when it is built, the graph builder refuses weights that differ from it and reads
from it which optional parts a model has, export transposes the tensors it marks as linear
maps, and the parity test (tests/engine/test_model.py) runs every combination of the flags
listed in ``FLAGS``, so a new variant is declared here, built on both sides, and tested without
another list to keep in step. The attention flags (``ATTENTION_FLAGS``) change only how tokens
attend; their own parity test (tests/engine/test_attention_parity.py) runs every combination of
them against both layouts, the side-to-move view and the three predictors.

Shapes are those of the ONNX file: a linear map is stored [in, out] (torch keeps [out, in]).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oneply.engine.facts.features import MOVE_FACTS, SQUARE_FACTS, check_names, table_offsets
from oneply.engine.facts.moves import NUM_MOVES, NUM_PROMOTIONS
from oneply.engine.facts.tokenizer import STATE_LENGTH, VOCAB_SIZE

#: BOS + the state tokens, then one move token
SEQ_LENGTH = STATE_LENGTH + 2
#: BOS + the state tokens: the whole sequence of a state-value or policy model
STATE_SEQ_LENGTH = STATE_LENGTH + 1
#: what a model predicts (the paper's three predictors; config ``predictor``):
#: ``av`` the win probability of each given move (K bins per move, the original format);
#: ``sv`` the win probability of the position for the side to move (K bins per position);
#: ``bc`` a distribution over the given (legal) moves, trained on Stockfish's best move.
#: sv and bc read the state only: no move token, so no move embeddings or move facts.
PREDICTORS = ("av", "sv", "bc")
#: a bc model's logit for a padded move slot: nothing after the softmax (finite: no NaN)
PAD_LOGIT = -1e9
#: the config flags that add or change parts; the parity test runs their combinations
FLAGS: dict[str, tuple[Any, ...]] = {
    "move_features": (False, True),  # from/to-square and promotion embeddings on the move
    "piece_features": (False, True),  # with move_features: the pieces on those squares
    "mirror": (False, True),  # the side-to-move view (no weights: a graph operation)
    "features": ((), ("pinned", "check"), None),  # facts read (None: every fact)
}
#: the flags that add a bias to the attention scores (format version 6;
#: engine/model/attention_bias.py and training/model/attention.py build them). Kept apart from FLAGS
#: because they act on the scores, not on the embeddings FLAGS change: crossing the two would
#: multiply the slowest test of the suite eight-fold to test pairs that cannot interact.
ATTENTION_FLAGS: dict[str, tuple[bool, ...]] = {
    # a learned bias per layer, head and pair of board squares (Lc0's, Chessformer's geometry)
    "square_bias": (False, True),
    # a bias per layer and head over the square pairs made from the position itself (Lc0's
    # smolgen): the board tokens squeezed to a small vector, per head a few coefficients of a
    # learned basis of 64×64 biases shared by every layer
    "smolgen": (False, True),
    # action values only: the move token's bias towards each board square, learned per layer and
    # head for its from-square and for its to-square (where it comes from and where it goes)
    "move_bias": (False, True),
}
#: smolgen's sizes: each board token squeezed to this many numbers ...
SMOLGEN_COMPRESS = 8
#: ... the 64 of them to one position vector of this size ...
SMOLGEN_HIDDEN = 64
#: ... and per head this many coefficients of the shared basis of square-pair biases
SMOLGEN_GEN = 32


@dataclass(frozen=True)
class Param:
    """One weight tensor: its name (torch's state_dict key, the ONNX initializer name), its
    shape in the ONNX file, and whether it is a linear map (transposed in torch)."""

    name: str
    shape: tuple[int, ...]
    linear: bool = False


def _block(i: int, d: int, widening: int) -> list[Param]:
    p = f"blocks.{i}"
    return [
        Param(f"{p}.ln1.weight", (d,)),
        Param(f"{p}.ln1.bias", (d,)),
        Param(f"{p}.qkv.weight", (d, 3 * d), linear=True),
        Param(f"{p}.proj.weight", (d, d), linear=True),
        Param(f"{p}.ln2.weight", (d,)),
        Param(f"{p}.ln2.bias", (d,)),
        Param(f"{p}.mlp.w13.weight", (d, 2 * widening * d), linear=True),
        Param(f"{p}.mlp.w2.weight", (widening * d, d), linear=True),
    ]


def _attention(i: int, d: int, heads: int, parts: Mapping[str, Any]) -> list[Param]:
    """Block i's attention-bias weights (ATTENTION_FLAGS); the tables are [head, row, column]
    with rows and columns the 64 board tokens in sequence order (rank 8 first)."""
    p = f"blocks.{i}"
    params = []
    if parts["square_bias"]:
        params.append(Param(f"{p}.square_bias", (heads, 64, 64)))
    if parts["smolgen"]:
        params += [
            Param(f"{p}.smolgen.compress.weight", (d, SMOLGEN_COMPRESS), linear=True),
            Param(
                f"{p}.smolgen.dense.weight", (64 * SMOLGEN_COMPRESS, SMOLGEN_HIDDEN), linear=True
            ),
            Param(f"{p}.smolgen.ln.weight", (SMOLGEN_HIDDEN,)),
            Param(f"{p}.smolgen.ln.bias", (SMOLGEN_HIDDEN,)),
            Param(f"{p}.smolgen.gen.weight", (SMOLGEN_HIDDEN, heads * SMOLGEN_GEN), linear=True),
        ]
    if parts["move_bias"]:
        params.append(Param(f"{p}.move_from_bias", (heads, 64, 64)))
        params.append(Param(f"{p}.move_to_bias", (heads, 64, 64)))
    return params


def predictor_of(config: Mapping[str, Any]) -> str:
    """The config's predictor (``av`` when absent: every file before format 5)."""
    predictor = str(config.get("predictor") or "av")
    if predictor not in PREDICTORS:
        raise ValueError(f"unknown predictor {predictor!r}; expected one of {PREDICTORS}")
    return predictor


def parameters(config: Mapping[str, Any]) -> list[Param]:
    """Every weight of a model with this config (ModelConfig fields)."""
    d, bins = int(config["width"]), int(config.get("num_bins", 128))
    predictor = predictor_of(config)
    if predictor != "av":  # the state alone: no move token, so no move weights
        bins = NUM_MOVES if predictor == "bc" else bins  # bc: one logit per move id
        params = [
            Param("bos", (d,)),
            Param("pos_embed", (STATE_SEQ_LENGTH, d)),
            Param("state_embed.weight", (VOCAB_SIZE, d)),
        ]
    else:
        params = [
            Param("bos", (d,)),
            Param("pos_embed", (SEQ_LENGTH, d)),
            Param("state_embed.weight", (VOCAB_SIZE, d)),
            Param("move_embed.weight", (NUM_MOVES, d)),
        ]
    if config.get("move_features") and predictor == "av":
        params += [
            Param("from_embed.weight", (64, d)),
            Param("to_embed.weight", (64, d)),
            Param("promo_embed.weight", (NUM_PROMOTIONS, d)),
        ]
        if config.get("piece_features", True):
            params += [
                Param("from_piece.weight", (d, d), linear=True),
                Param("to_piece.weight", (d, d), linear=True),
            ]
    parts = structure(config)
    for i in range(int(config["layers"])):
        params += _block(i, d, int(config.get("widening", 4)))
        params += _attention(i, d, int(config["heads"]), parts)
    if parts["smolgen"]:  # the basis of square-pair biases, shared by every layer
        params.append(Param("smolgen_global.weight", (SMOLGEN_GEN, 64 * 64), linear=True))
    params += [
        Param("final_ln.weight", (d,)),
        Param("final_ln.bias", (d,)),
        Param("head.weight", (d, bins), linear=True),
        Param("head.bias", (bins,)),
    ]
    features = config.get("features") or ()
    for table, declared in (("square_fact_embed", SQUARE_FACTS), ("move_fact_embed", MOVE_FACTS)):
        if declared is MOVE_FACTS and predictor != "av":
            continue
        _, rows = table_offsets(features, declared)
        if rows:
            params.append(Param(f"{table}.weight", (rows, d)))
    return params


def linear_names(config: Mapping[str, Any]) -> set[str]:
    """The weights stored transposed between torch and ONNX."""
    return {p.name for p in parameters(config) if p.linear}


def structure(config: Mapping[str, Any]) -> dict[str, Any]:
    """What decides the graph beyond the weights' shapes: the FLAGS and ATTENTION_FLAGS,
    normalised (absent: off, as in every file before format 6)."""
    predictor = predictor_of(config)
    return {
        "predictor": predictor,
        "move_features": bool(config.get("move_features", False)),
        "piece_features": bool(config.get("piece_features", True)),
        "mirror": bool(config.get("mirror", False)),
        "features": check_names(config.get("features") or ()),
        "square_bias": bool(config.get("square_bias", False)),
        "smolgen": bool(config.get("smolgen", False)),
        "move_bias": bool(config.get("move_bias", False)) and predictor == "av",
    }


def attention_flags(config: Mapping[str, Any]) -> list[str]:
    """The ATTENTION_FLAGS a model of this config has on (none: a file older formats read)."""
    parts = structure(config)
    return [name for name in ATTENTION_FLAGS if parts[name]]


def check_weights(config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> None:
    """Raise ValueError naming every weight that is missing, extra or of the wrong shape."""
    wanted = {p.name: p.shape for p in parameters(config)}
    problems = [f"missing {n}" for n in wanted if n not in shapes]
    problems += [f"unexpected {n}" for n in shapes if n not in wanted]
    problems += [
        f"{n}: shape {tuple(shapes[n])}, declared {s}"
        for n, s in wanted.items()
        if n in shapes and tuple(shapes[n]) != s
    ]
    if problems:
        raise ValueError("weights do not match the declared architecture: " + "; ".join(problems))

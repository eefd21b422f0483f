"""The rows of the sample-efficiency table (`oneply train ablate`, training/lab/ablation.py): what
each variant changes in the model or its training against the base run, and nothing else — so a
row's difference from the base is the change it names. A new input group or training idea joins
the table as a row here; the runner that trains and measures them lives in training/lab/ablation.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from oneply.engine.errors import CommandError
from oneply.engine.facts.features import ADOPTED_GROUPS, BASE_GROUPS, GROUPS

#: the architecture every variant starts from (--preset)
BASE_PRESET = "small"
#: the rows compare against the v2/v3 architecture: the preset minus what the table adopted
BASE_MODEL: dict[str, Any] = {"mirror": False, "features": ()}
#: sixteen facts: every group up to `mobility` (what the `mobility` row compares against)
_MOBILITY_GROUPS = (
    *BASE_GROUPS,
    *("exchange", "threats", "checks", "forks", "replies", "mate_threats", "mobility"),
)


def _facts(*groups: str) -> dict[str, Any]:
    """Model changes of a round-2 row: the view on, and the facts of these groups."""
    return {"mirror": True, "features": tuple(n for g in groups for n in GROUPS[g])}


#: round 3 (issue 81) starts from v15's network: the adopted facts, the side-to-move view, the
#: move features, 4 x 128 — and the campaign's training (its listwise ranking loss,
#: training/lab/campaign.RANK_WEIGHT)
_V15: dict[str, Any] = _facts(*ADOPTED_GROUPS)
_V15_TRAIN: dict[str, Any] = {"rank_weight": 1.0}
#: every attention bias of engine/model/architecture.ATTENTION_FLAGS: the shape, widening and size
#: rows carry them, so they compare against ``bias-all`` (4 x 128) and decide the network the
#: new lineage is built with. Their sizes count the plain network; the bias tables add
#: parameters that cost no multiply-adds (a table lookup and an add per score).
_GEOMETRY: dict[str, Any] = {**_V15, "square_bias": True, "smolgen": True, "move_bias": True}


@dataclass(frozen=True)
class Variant:
    """One row of the table: what differs from the base run."""

    name: str
    what: str
    model: dict[str, Any] = field(default_factory=dict)  # ModelConfig fields
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields
    zero_positions: bool = False  # positional embeddings start at zero (the v1 init)
    depth: int = 2  # Stockfish depth of the labels it learns from (among DATA's directories)


VARIANTS: tuple[Variant, ...] = (
    Variant(
        "v1",
        "opaque move id, positional embeddings at zero (model v1)",
        {"move_features": False},
        zero_positions=True,
    ),
    Variant("pos-init", "v1 + positions initialised like other weights", {"move_features": False}),
    Variant("squares", "+ move token gets from/to-square and promotion", {"piece_features": False}),
    Variant("pieces", "+ the pieces on those squares (shipped v2 architecture)"),
    Variant("mirror", "+ board mirrored for black, inside the graph", {"mirror": True}),
    Variant("deep", "8 layers x 96 wide (about the same parameters)", {"layers": 8, "width": 96}),
    Variant("wide", "2 layers x 176 wide (about the same parameters)", {"layers": 2, "width": 176}),
    Variant("lr-3e-4", "learning rate 3e-4 (base 1e-3)", train={"lr": 3e-4}),
    Variant("lr-2e-3", "learning rate 2e-3", train={"lr": 2e-3}),
    Variant("batch-64", "64 positions per step (twice the steps)", train={"batch": 64}),
    Variant("batch-256", "256 positions per step (half the steps)", train={"batch": 256}),
    Variant("warmup-0", "no warm-up (base: 5% of the steps)", train={"warmup": 0}),
    Variant("ema-0.999", "EMA decay 0.999 (base 0.99)", train={"ema_decay": 0.999}),
    Variant("no-ema", "no EMA: the raw weights", train={"ema_decay": 0.0}),
    # round 2 (issue 18): what a player sees, on top of the side-to-move view ("mirror")
    Variant("facts-attacks", "mirror + attackers per square", _facts("attacks")),
    Variant("facts-pins", "mirror + pinned pieces", _facts("pins")),
    Variant(
        "facts-moves",
        "mirror + capture, check, destination attackers/defenders",
        _facts("move_facts"),
    ),
    Variant("facts", "mirror + attacks, pins, move facts (v5 architecture)", _facts(*BASE_GROUPS)),
    Variant(
        "facts-exchange",
        "facts + static exchange of each move, pieces en prise",
        _facts(*BASE_GROUPS, "exchange"),
    ),
    Variant(
        "rank",
        "facts + listwise ranking loss (weight 1, T 0.05)",
        _facts(*BASE_GROUPS),
        {"rank_weight": 1.0},
    ),
    Variant(
        "exchange-rank",
        "facts + static exchange + ranking loss (what presets and the campaign now train)",
        _facts(*BASE_GROUPS, "exchange"),
        {"rank_weight": 1.0},
    ),
    Variant(
        "exchange-threats",
        "facts + static exchange + what each move leaves en prise elsewhere",
        _facts(*BASE_GROUPS, "exchange", "threats"),
    ),
    Variant(
        "threats-checks",
        "exchange-threats + where the opponent could check or mate next",
        _facts(*BASE_GROUPS, "exchange", "threats", "checks"),
    ),
    Variant(
        "checks-forks",
        "threats-checks + what each move threatens to win next (double, discovered attacks)",
        _facts(*BASE_GROUPS, "exchange", "threats", "checks", "forks"),
    ),
    Variant(
        "forks-replies",
        "checks-forks + whether each move lets the opponent check or mate at once",
        _facts(*BASE_GROUPS, "exchange", "threats", "checks", "forks", "replies"),
    ),
    Variant(
        "replies-mate-threats",
        "forks-replies + whether each move threatens mate (were the opponent to pass)",
        _facts(*BASE_GROUPS, "exchange", "threats", "checks", "forks", "replies", "mate_threats"),
    ),
    Variant(
        "mate-threats-mobility",
        "replies-mate-threats + how many safe squares each piece has (trapped pieces)",
        _facts(*_MOBILITY_GROUPS),
    ),
    Variant(
        "mobility-structure",
        "mate-threats-mobility + each king's room and passed pawns (the rule of the square)",
        _facts(*_MOBILITY_GROUPS, "kings", "passers"),
    ),
    Variant(
        "gap",
        "facts + weight 1 + 4 x (best - second) per position",
        _facts(*BASE_GROUPS),
        {"gap_weight": 4.0},
    ),
    # the size sweep (issue 18): the v5 architecture at the other presets' sizes; compare
    # them with --cpu-hours (a bigger model sees fewer positions for the same CPU)
    Variant(
        "size-tiny",
        "facts at the tiny preset's size (2 layers x 32, 0.1M)",
        {**_facts(*BASE_GROUPS), "layers": 2, "heads": 2, "width": 32},
    ),
    Variant(
        "size-medium",
        "facts at the medium preset's size (6 layers x 192, 4.1M)",
        {**_facts(*BASE_GROUPS), "layers": 6, "heads": 6, "width": 192},
    ),
    # label depth (issue 18): deeper labels cost more Stockfish time per position; compare
    # with --cpu-hours on data generated at each depth
    Variant("depth-4", "facts, labels at Stockfish depth 4", _facts(*BASE_GROUPS), depth=4),
    Variant("depth-6", "facts, labels at Stockfish depth 6", _facts(*BASE_GROUPS), depth=6),
    # issue 22: the paper's other two predictors on the v5 inputs (compare with --cpu-hours)
    Variant(
        "sv",
        "facts, state value: HL-Gauss on the position's value (its best move's)",
        {**_facts(*BASE_GROUPS), "predictor": "sv"},
        {"predictor": "sv"},
    ),
    Variant(
        "bc",
        "facts, behavioural cloning: cross-entropy on the best move",
        {**_facts(*BASE_GROUPS), "predictor": "bc"},
        {"predictor": "bc"},
    ),
    # round 3 (issue 81): geometry in attention, depth against width, the FFN widening and size,
    # each row from scratch on v15's inputs and training (compare with --cpu-hours)
    Variant("bias-none", "v15's network and training, no attention bias (1.39M)", _V15, _V15_TRAIN),
    Variant(
        "bias-square",
        "bias-none + a learned bias per head over the 64 x 64 board square pairs",
        {**_V15, "square_bias": True},
        _V15_TRAIN,
    ),
    Variant(
        "bias-smolgen",
        "bias-none + a square-pair bias made from the position per head (smolgen)",
        {**_V15, "smolgen": True},
        _V15_TRAIN,
    ),
    Variant(
        "bias-move",
        "bias-none + the move token's bias towards the squares seen from its from/to-squares",
        {**_V15, "move_bias": True},
        _V15_TRAIN,
    ),
    Variant(
        "bias-all",
        "bias-none + square-pair, smolgen and move biases (4 x 128: the 1.4M size point)",
        _GEOMETRY,
        _V15_TRAIN,
    ),
    Variant(
        "deep-8x96",
        "bias-all at 8 layers x 96 wide (1.43M plain, as 4 x 128's 1.39M)",
        {**_GEOMETRY, "layers": 8, "width": 96},
        _V15_TRAIN,
    ),
    Variant(
        "ffn-1x",
        "bias-all with SwiGLU widening 1 (base 4): 0.80M plain",
        {**_GEOMETRY, "widening": 1},
        _V15_TRAIN,
    ),
    Variant(
        "ffn-1x-wide",
        "bias-all, widening 1 at 4 x 176 (1.36M plain: the parameters moved to the width)",
        {**_GEOMETRY, "widening": 1, "width": 176},
        _V15_TRAIN,
    ),
    Variant(
        "size-3m",
        "bias-all at 6 layers x 160, 5 heads (2.9M plain)",
        {**_GEOMETRY, "layers": 6, "heads": 5, "width": 160},
        _V15_TRAIN,
    ),
    Variant(
        "size-6m",
        "bias-all at 8 layers x 208, 4 heads (6.1M plain)",
        {**_GEOMETRY, "layers": 8, "heads": 4, "width": 208},
        _V15_TRAIN,
    ),
)
#: the equal-CPU table of issue 81, in the order to run it (`--only` takes this list)
ROUND_3: tuple[str, ...] = (
    "bias-none",
    "bias-square",
    "bias-smolgen",
    "bias-move",
    "bias-all",
    "deep-8x96",
    "ffn-1x",
    "ffn-1x-wide",
    "size-3m",
    "size-6m",
)

#: the base run's training settings (a variant overrides some)
BASE_TRAIN: dict[str, Any] = {"batch": 128, "lr": 1e-3, "ema_decay": 0.99}


def variant_named(name: str) -> Variant:
    for variant in VARIANTS:
        if variant.name == name:
            return variant
    known = ", ".join(v.name for v in VARIANTS)
    raise CommandError(f"no ablation variant {name!r}; known: {known}")


def supported(variant: Variant) -> bool:
    """Whether this oneply's ModelConfig has every field the variant changes."""
    from oneply.training.model.model import ModelConfig

    names = {f.name for f in dataclasses.fields(ModelConfig)}
    return set(variant.model) <= names

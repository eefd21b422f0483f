"""What decides a training run (TrainConfig) and the names of the files a run writes."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.errors import CommandError
from oneply.engine.facts.features import ADOPTED_GROUPS, GROUPS
from oneply.engine.model.architecture import PREDICTORS
from oneply.engine.model.values import HL_GAUSS_SIGMA
from oneply.training.fit.options import option

CHECKPOINT = "checkpoint.pt"
DEFAULT_PRESET = "small"
METRICS = "metrics.jsonl"
PLOT = "training.png"


@dataclass
class TrainConfig:
    """Everything that decides a run; stored in the checkpoint and checked on resume. Each
    field is also an option of `oneply train fit` (training/fit/options.py), in this order."""

    data: list[str] = option(
        "annotated shard directories (train split used)", positional=True, required=True, nargs="*"
    )
    out: str = option(
        "checkpoint, metrics and plot directory", required=True, cli_default="runs/fit"
    )
    preset: str = option(  # "": the --init source's, else the resumed checkpoint's, else small
        "model size (default: the --init model's, the resumed run's, else small)", default=""
    )
    facts: list[str] = option(  # fact groups read ([]: the preset's)
        f"fact groups the model reads, of {', '.join(GROUPS)} (default: the preset's, "
        f"{' '.join(ADOPTED_GROUPS)}; with --init, a superset of the source's)",
        factory=list,
        nargs="+",
        choices=GROUPS,
        metavar="GROUP",
    )
    layers: int = option(
        "transformer blocks (default: the preset's, or the --init model's); with --init, "
        "more than the source's grows it: the new blocks are appended as identities (zero "
        "output projections), so the grown model starts out computing what its source computes",
        default=0,
        metavar="N",
    )
    init: str = option(  # an ONNX model file or a checkpoint (weights only)
        "warm start from a model file's or checkpoint's weights (fresh optimiser/schedule)",
        default="",
        metavar="MODEL.onnx|CHECKPOINT.pt",
    )
    follow: bool = option(
        "keep picking up new shards in the data directories (oneply train generate)",
        default=False,
        action="store_true",
    )
    rescan_every: int = option("steps between looks (--follow)", default=50)
    max_passes: float = option(
        "--follow: wait for new shards rather than read the known positions more than P "
        "times in all (0: never wait); a trainer faster than its generator then leaves the core "
        "to it (a trainer that re-reads a few fresh positions fits them and loses held out)",
        default=0.0,
        metavar="P",
    )
    loader_workers: int = option(  # training/fit/batch_loader.py
        "processes that make batches ahead (0: in the trainer); on a GPU, about one per "
        "free core: making a batch (the facts) costs more than training on it",
        default=0,
    )
    layout: str = option(
        "shared: a position's moves in one sequence; per_move: one sequence a move",
        default="shared",
    )
    steps: int = option("steps to train (with --hours: the most)", default=1000)
    hours: float = option(  # training/fit/deadline.py re-plans the end
        "end this sitting after this many wall-clock hours, the cosine schedule re-planned "
        "from the run's own pace to anneal then (for a session of known length)",
        default=0.0,
    )
    batch: int = option("positions per step per rank", default=256)
    micro_batch: int = option(
        "positions per forward/backward pass (gradient accumulation); 0 = --batch", default=0
    )
    lr: float = option("peak learning rate", default=4e-4)
    min_lr_ratio: float = option(
        "the cosine schedule's last learning rate, of the peak", default=0.1
    )
    warmup: int = option("warm-up steps", default=100)
    weight_decay: float = option("AdamW weight decay", default=0.01)
    grad_clip: float = option("gradient norm clip", default=1.0)
    ema_decay: float = option("decay of the weights' moving average (exported)", default=0.99)
    predictor: str = option(  # engine/model/architecture.PREDICTORS; training/fit/targets.py
        "what the model predicts: av the value of every legal move (default), sv the "
        "position's value (its best move's), bc the best move (the paper's three predictors)",
        default="av",
        choices=PREDICTORS,
    )
    target: str = option(
        "the value loss of av and sv (bc: cross-entropy over the legal moves)",
        default="hl_gauss",
        choices=("hl_gauss", "one_hot"),
    )
    sigma: float = option("HL-Gauss σ in bin widths", default=HL_GAUSS_SIGMA)
    rank_weight: float = option(  # training/fit/targets.py
        "add a listwise ranking loss on the expected wins with this weight (default 0: off)",
        default=0.0,
    )
    rank_temperature: float = option(
        "its softmax temperature, in win probability (default %(default)s)", default=0.05
    )
    gap_weight: float = option(  # extra weight on positions whose best move stands out
        "weight positions by 1 + W x (best - second value) (default 0: all alike)", default=0.0
    )
    bucket: int = option(  # sort positions by move count inside windows of this many batches
        "bucketing window, batches", default=32
    )
    val_percent: float = option("share of the positions held out for validation", default=5.0)
    val_positions: int = option("validation positions per evaluation, at most", default=2048)
    eval_every: int = option("steps between evaluations", default=200)
    checkpoint_every: int = option("steps between checkpoints", default=200)
    checkpoint_minutes: float = option(
        "also checkpoint once this many minutes passed since the last save (0: off)", default=10.0
    )
    log_every: int = option("steps between progress lines", default=10)
    seed: int = option("the run's seed: initial weights and data order", default=0)
    bf16: bool = option(
        "bf16 autocast where the hardware supports it (default: on)",
        default=True,
        action=argparse.BooleanOptionalAction,
    )
    compile: bool = option(
        "torch.compile the forward pass (inductor; a C++ compiler): about 15%% less CPU "
        "per step for the small preset on a CPU, after a few minutes of compiling (default: off)",
        default=False,
        action=argparse.BooleanOptionalAction,
    )
    device: str = option(
        "where to train (auto: a GPU when there is one)",
        default="auto",
        choices=("auto", "cpu", "cuda"),
    )
    exclude_puzzles: list[str] = option(
        "puzzle CSVs whose positions are removed from training "
        f"(default: {DEV_PUZZLES} when it exists)",
        factory=list,
        cli_default=None,
        nargs="*",
        metavar="CSV",
    )
    puzzles: str = option(  # "" = none
        f"puzzles solved (plain argmax) at every evaluation (default: {DEV_PUZZLES}); "
        "their positions are never trained on",
        default="",
        cli_default=None,
        metavar="CSV",
    )
    eval_puzzles: int = option("evenly spaced puzzles per check (0: no puzzle check)", default=200)


def check_compatible(saved: TrainConfig, wanted: TrainConfig) -> None:
    """Refuse to resume a checkpoint trained with settings that decide the weights differently
    (the step count may grow: resuming with more --steps continues the run)."""
    fixed = (
        "preset",
        "facts",
        "layers",
        "layout",
        "predictor",
        "batch",
        "seed",
        "target",
        "sigma",
        "rank_weight",
        "rank_temperature",
        "gap_weight",
        "bucket",
        "val_percent",
    )
    changed = [
        f"{k}: {getattr(saved, k)} → {getattr(wanted, k)}"
        for k in fixed
        if getattr(saved, k) != getattr(wanted, k)
    ]
    if wanted.init and wanted.init != saved.init:  # a resumed run keeps its weights
        changed.append(f"init: {saved.init or '(none)'} → {wanted.init}")
    if changed:
        raise CommandError(
            f"{wanted.out}/{CHECKPOINT} was trained with other settings ({'; '.join(changed)}); "
            "use another --out or --no-resume"
        )

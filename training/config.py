"""What decides a training run (TrainConfig) and the names of the files a run writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from oneply.engine.errors import CommandError
from oneply.engine.values import HL_GAUSS_SIGMA

CHECKPOINT = "checkpoint.pt"
DEFAULT_PRESET = "small"
METRICS = "metrics.jsonl"
PLOT = "training.png"


@dataclass
class TrainConfig:
    """Everything that decides a run; stored in the checkpoint and checked on resume."""

    data: list[str]
    out: str
    preset: str = ""  # "": the --init source's, else the resumed checkpoint's, else DEFAULT_PRESET
    facts: list[str] = field(default_factory=list)  # fact groups read ([]: the preset's)
    layers: int = 0  # transformer blocks (0: the preset's or source's; more grows a --init)
    layout: str = "shared"
    steps: int = 1000  # with hours: the most steps (training/deadline.py re-plans the end)
    hours: float = 0.0  # end this sitting after this many hours, annealed then (0: run to steps)
    batch: int = 256  # positions per step (per rank)
    micro_batch: int = 0  # positions per forward/backward (0 = whole batch)
    lr: float = 4e-4
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    ema_decay: float = 0.99
    predictor: str = "av"  # av, sv or bc (engine/architecture.PREDICTORS; training/targets.py)
    target: str = "hl_gauss"  # or "one_hot"; the value loss of av and sv
    sigma: float = HL_GAUSS_SIGMA  # HL-Gauss standard deviation, in bin widths
    rank_weight: float = 0.0  # weight of the listwise ranking loss (training/targets.py)
    rank_temperature: float = 0.05  # its softmax temperature, in win-probability units
    gap_weight: float = 0.0  # extra weight on positions whose best move stands out
    bucket: int = 32  # sort positions by move count inside windows of this many batches
    val_percent: float = 5.0
    val_positions: int = 2048
    eval_every: int = 200
    checkpoint_every: int = 200
    checkpoint_minutes: float = 10.0  # also save once this much wall clock passed (0: steps only)
    log_every: int = 10
    seed: int = 0
    bf16: bool = True
    compile: bool = False  # torch.compile the training forward pass (fit --compile)
    device: str = "auto"
    exclude_puzzles: list[str] = field(default_factory=list)
    init: str = ""  # warm start: an ONNX model file or a checkpoint (weights only)
    follow: bool = False  # pick up shards that appear in the data directories while training
    rescan_every: int = 50  # steps between looks for new shards (--follow)
    max_passes: float = 0.0  # --follow: wait for shards rather than read known ones more (0: off)
    loader_workers: int = 0  # processes making batches ahead (training/batch_loader.py)
    puzzles: str = ""  # puzzle CSV checked (plain argmax) at every evaluation; "" = none
    eval_puzzles: int = 200  # evenly spaced puzzles of that file per check


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

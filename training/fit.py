"""`oneply train fit`: train the action-value transformer on annotated shards.

One readable loop (nanoGPT style)::

    for step in range(start, steps):
        batch = next positions of this epoch's permutation      # data order = f(seed, step)
        lr = warm-up + cosine(step)
        loss = cross-entropy(model(batch), HL-Gauss targets)    # masked over padded moves
        loss.backward(); clip(1.0); AdamW.step(); EMA.update()
        every --eval-every steps: validation loss / accuracy on the `val` split (EMA weights)
        every --checkpoint-every steps: atomic checkpoint (exact resume)

Batches are measured in *positions*. ``shared`` (the default layout) puts all of a position's
legal moves in one sequence, padded to the batch's widest position with move id -1 and masked
out of the loss; ``per_move`` flattens the batch into one 79-token sequence per (position,
move) pair, like the paper. Positions are bucketed by move count inside windows of
``--bucket`` batches so that a batch's padding stays small without giving up shuffling.

Exact resume: the data order is a pure function of (seed, epoch), the learning rate a pure
function of the step, and the checkpoint holds model, AdamW, EMA, step and every RNG state;
so a run killed and resumed ends with the same weights as one that never stopped.

Multi-GPU / multi-node: launch with ``torchrun`` (it sets RANK, LOCAL_RANK, WORLD_SIZE). Each
rank trains on its own slice of every global batch (``--batch`` positions per rank); gradients
are averaged by DistributedDataParallel; only rank 0 validates and writes files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from engine.model_file import REPO_ROOT
from engine.values import NUM_BINS
from training.dataset import AnnotatedDataset, position_key
from training.model import LAYOUTS, PRESETS, ActionValueModel

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
PLOT = "training.png"
#: moves whose Stockfish win is within this of the best count as "among Stockfish's best"
#: (1 centipawn near equality is ~9e-4 win probability, so this means "an equal score")
BEST_TOLERANCE = 1e-4
DEFAULT_PUZZLES = REPO_ROOT.parent / "shared" / "data" / "puzzles-dev.csv"


@dataclass
class TrainConfig:
    """Everything that decides a run; stored in the checkpoint and checked on resume."""

    data: list[str]
    out: str
    preset: str = "small"
    layout: str = "shared"
    steps: int = 1000
    batch: int = 256  # positions per step (per rank)
    micro_batch: int = 0  # positions per forward/backward (0 = whole batch)
    lr: float = 4e-4
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    ema_decay: float = 0.99
    target: str = "hl_gauss"  # or "one_hot"
    sigma: float = 0.75  # HL-Gauss standard deviation, in bin widths
    bucket: int = 32  # sort positions by move count inside windows of this many batches
    val_percent: float = 5.0
    val_positions: int = 2048
    eval_every: int = 200
    checkpoint_every: int = 200
    log_every: int = 10
    seed: int = 0
    bf16: bool = True
    device: str = "auto"
    exclude_puzzles: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- targets and loss


def hl_gauss_targets(wins: torch.Tensor, num_bins: int = NUM_BINS, sigma: float = 0.75):
    """Histogram-loss Gaussian targets [..., K]: a Gaussian at each win probability with
    standard deviation `sigma` bin widths, integrated over each bin of [0, 1] and renormalised
    (mass beyond 0 and 1 is dropped). Smooths the target so neighbouring bins share credit."""
    edges = torch.linspace(0.0, 1.0, num_bins + 1, device=wins.device, dtype=torch.float32)
    scale = sigma / num_bins * math.sqrt(2.0)
    cdf = torch.special.erf((edges - wins.float().unsqueeze(-1)) / scale)
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / mass.sum(dim=-1, keepdim=True)


def one_hot_targets(wins: torch.Tensor, num_bins: int = NUM_BINS) -> torch.Tensor:
    """The bin holding each win probability (searchsorted side='left', REFERENCE.md §3)."""
    edges = torch.linspace(0.0, 1.0, num_bins + 1, device=wins.device)[1:-1]
    bins = torch.searchsorted(edges, wins.float().contiguous(), side="left")
    return F.one_hot(bins, num_bins).float()


def make_targets(wins: torch.Tensor, config: TrainConfig) -> torch.Tensor:
    if config.target == "one_hot":
        return one_hot_targets(wins)
    return hl_gauss_targets(wins, sigma=config.sigma)


def expected_wins(log_probs: torch.Tensor) -> torch.Tensor:
    centres = (torch.arange(log_probs.shape[-1], device=log_probs.device) + 0.5) / log_probs.shape[
        -1
    ]
    return log_probs.exp() @ centres


def action_hits(log_probs: torch.Tensor, wins: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per position: is the move with the highest predicted win among Stockfish's best?"""
    predicted = expected_wins(log_probs.float()).masked_fill(~mask, -1.0)
    chosen = wins.gather(1, predicted.argmax(dim=1, keepdim=True)).squeeze(1)
    best = wins.masked_fill(~mask, -1.0).max(dim=1).values
    return chosen >= best - BEST_TOLERANCE


# --------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """Positions padded to the widest one: move id -1 and mask False mark padding."""

    states: torch.Tensor  # int64 [B, 77]
    moves: torch.Tensor  # int64 [B, N]
    wins: torch.Tensor  # float32 [B, N]
    mask: torch.Tensor  # bool [B, N]

    @property
    def action_values(self) -> int:
        return int(self.mask.sum())

    def to(self, device: torch.device) -> Batch:
        return Batch(*(t.to(device, non_blocking=True) for t in asdict_shallow(self)))

    def split(self, size: int) -> list[Batch]:
        parts = zip(*(t.split(size) for t in asdict_shallow(self)), strict=True)
        return [Batch(*part) for part in parts]


def asdict_shallow(batch: Batch) -> tuple[torch.Tensor, ...]:
    return batch.states, batch.moves, batch.wins, batch.mask


def collate(examples: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Batch:
    width = max(len(moves) for _, moves, _ in examples)
    moves = np.full((len(examples), width), -1, dtype=np.int64)
    wins = np.zeros((len(examples), width), dtype=np.float32)
    for row, (_, ids, values) in enumerate(examples):
        moves[row, : len(ids)] = ids
        wins[row, : len(ids)] = values
    states = np.stack([state for state, _, _ in examples]).astype(np.int64)
    moves_t = torch.from_numpy(moves)
    return Batch(torch.from_numpy(states), moves_t, torch.from_numpy(wins), moves_t >= 0)


class BatchOrder:
    """Which dataset indices form batch `b` of epoch `e`, for this rank: a pure function of
    (seed, epoch), so resuming needs only the step.

    Every epoch: a permutation of the training positions, cut into windows of `bucket` global
    batches; each window is sorted by move count (less padding), cut into batches, and those
    batches are shuffled. A global batch of batch·world positions is split between ranks.
    """

    def __init__(self, lengths: np.ndarray, batch: int, bucket: int, seed: int, rank=0, world=1):
        self.lengths, self.batch, self.bucket = lengths, batch, max(1, bucket)
        self.seed, self.rank, self.world = seed, rank, world
        self.global_batch = batch * world
        self.per_epoch = len(lengths) // self.global_batch
        if self.per_epoch == 0:
            raise SystemExit(
                f"{len(lengths)} training positions cannot fill one batch of "
                f"{self.global_batch}; lower --batch or annotate more positions"
            )
        self._cache: tuple[int, np.ndarray] | None = None

    def epoch_batches(self, epoch: int) -> np.ndarray:
        """[per_epoch, global_batch] dataset indices of one epoch."""
        if self._cache and self._cache[0] == epoch:
            return self._cache[1]
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(len(self.lengths))[: self.per_epoch * self.global_batch]
        window = self.bucket * self.global_batch
        for start in range(0, len(order), window):
            chunk = order[start : start + window]
            order[start : start + window] = chunk[np.argsort(self.lengths[chunk], kind="stable")]
        batches = order.reshape(self.per_epoch, self.global_batch)
        batches = batches[rng.permutation(self.per_epoch)]
        self._cache = (epoch, batches)
        return batches

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, batch index within the epoch) of a global step."""
        return divmod(step, self.per_epoch)

    def indices(self, step: int) -> np.ndarray:
        epoch, index = self.position(step)
        global_batch = self.epoch_batches(epoch)[index]
        return global_batch[self.rank :: self.world]


# --------------------------------------------------------------------------- model helpers


class EMA:
    """Exponential moving average of the weights (the ones exported and evaluated).

    The decay ramps up as min(decay, (1 + t) / (10 + t)) so that short runs are not dominated
    by the random initialisation.
    """

    def __init__(self, model: torch.nn.Module, decay: float):
        self.decay = decay
        self.model = ActionValueModel(model.config).to(next(model.parameters()).device)
        self.model.load_state_dict(model.state_dict())
        self.model.eval().requires_grad_(False)

    @torch.no_grad()
    def update(self, model: torch.nn.Module, step: int) -> None:
        decay = min(self.decay, (1 + step) / (10 + step))
        ema = list(self.model.parameters())
        torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 1.0 - decay)


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to min_lr_ratio·lr at the last step."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return config.lr * (config.min_lr_ratio + (1.0 - config.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, config: TrainConfig, fused: bool):
    """AdamW; matrices and embeddings decay, LayerNorm gains, biases and BOS do not."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.95), fused=fused or None)


def forward(model, batch: Batch, layout: str) -> torch.Tensor:
    """Log-probs [B, N, K]; per_move runs only the real (position, move) pairs."""
    if layout == "shared":
        return model(batch.states, batch.moves, layout="shared")
    rows, cols = batch.mask.nonzero(as_tuple=True)
    flat = model(batch.states[rows], batch.moves[rows, cols].unsqueeze(1), layout="per_move")
    out = flat.new_zeros(*batch.moves.shape, flat.shape[-1])
    out[rows, cols] = flat[:, 0]
    return out


def loss_sum(log_probs: torch.Tensor, batch: Batch, config: TrainConfig) -> torch.Tensor:
    """Summed cross-entropy over the real moves (the caller divides by their number)."""
    targets = make_targets(batch.wins, config)
    per_move = -(targets * log_probs.float()).sum(dim=-1)
    return per_move.masked_fill(~batch.mask, 0.0).sum()


def autocast(device: torch.device, enabled: bool):
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def bf16_supported(device: torch.device) -> bool:
    """bf16 pays off on GPUs that support it and on CPUs with AVX512-BF16 or AMX."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


# --------------------------------------------------------------------------- distributed


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_distributed(device_name: str) -> tuple[Dist, torch.device]:
    """Rank, world size and this process's device; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    info = Dist(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))
    cuda = device_name == "cuda" or (device_name == "auto" and torch.cuda.is_available())
    device = torch.device(f"cuda:{info.local_rank}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return info, device


# --------------------------------------------------------------------------- checkpoints


def rng_state() -> dict:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_atomic(obj: object, path: Path) -> None:
    """torch.save to a temporary file, fsync, rename: a killed run never leaves half a file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as file:
        torch.save(obj, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)


def trim_metrics(path: Path, step: int) -> None:
    """Drop metric lines logged after `step` (written after the checkpoint we resume from)."""
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["step"] <= step]
    path.write_text("".join(line + "\n" for line in kept))


# --------------------------------------------------------------------------- data


def puzzle_keys(csv_path: Path) -> set[bytes]:
    """Position keys of every position along every puzzle line (never train on them)."""
    import csv

    import chess

    from engine.tokenizer import tokenize

    keys = set()
    with open(csv_path, newline="") as file:
        for row in csv.DictReader(file):
            board = chess.Board(row["FEN"])
            keys.add(position_key(tokenize(board)))
            for uci in row["Moves"].split():
                board.push_uci(uci)
                keys.add(position_key(tokenize(board)))
    return keys


def training_indices(dataset: AnnotatedDataset, excluded: set[bytes]) -> np.ndarray:
    """Indices of the training positions, minus any evaluation (puzzle) position."""
    if not excluded:
        return np.arange(len(dataset))
    keep = [i for i in range(len(dataset)) if position_key(dataset[i][0]) not in excluded]
    return np.asarray(keep, dtype=np.int64)


def move_counts(dataset: AnnotatedDataset, indices: np.ndarray) -> np.ndarray:
    return np.array([len(dataset[int(i)][1]) for i in indices], dtype=np.int64)


# --------------------------------------------------------------------------- validation


@torch.no_grad()
def validate(model, dataset, config: TrainConfig, device, bf16: bool) -> dict:
    """Loss and action accuracy over (up to val_positions of) the validation split."""
    count = min(len(dataset), config.val_positions)
    total_loss = total_values = hits = 0.0
    for start in range(0, count, config.batch):
        batch = collate([dataset[i] for i in range(start, min(count, start + config.batch))])
        for part in batch.split(config.micro_batch or config.batch):
            part = part.to(device)
            with autocast(device, bf16):
                log_probs = forward(model, part, config.layout)
            total_loss += float(loss_sum(log_probs, part, config))
            total_values += part.action_values
            hits += float(action_hits(log_probs, part.wins, part.mask).sum())
    return {"loss": total_loss / max(1, total_values), "accuracy": hits / max(1, count)}


# --------------------------------------------------------------------------- plot


def plot_metrics(metrics_path: Path, png_path: Path) -> None:
    """Train/val loss and accuracy against steps, as a PNG (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    for split, style in (("train", "-"), ("val", "o-")):
        data = [r for r in rows if r["split"] == split]
        if data:
            steps = [r["step"] for r in data]
            ax_loss.plot(steps, [r["loss"] for r in data], style, label=split, markersize=3)
            ax_acc.plot(steps, [r["accuracy"] for r in data], style, label=split, markersize=3)
    ax_loss.set(xlabel="step", ylabel="cross-entropy (nats)", title="loss")
    ax_acc.set(xlabel="step", ylabel="action accuracy", title="best move among Stockfish's best")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    tmp = png_path.with_name(f".{png_path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, png_path)


# --------------------------------------------------------------------------- training


@dataclass
class State:
    """What a checkpoint restores: weights, optimiser, EMA, the step and run totals."""

    model: ActionValueModel
    ema: EMA
    optimizer: torch.optim.Optimizer
    step: int = 0
    seconds: float = 0.0
    seen: int = 0  # action values trained on, all ranks
    val: dict = field(default_factory=dict)  # the latest validation metrics


def build_state(config: TrainConfig, device: torch.device, checkpoint: dict | None) -> State:
    torch.manual_seed(config.seed)  # same initial weights on every rank
    random.seed(config.seed)
    np.random.seed(config.seed)
    model = ActionValueModel(PRESETS[config.preset]).to(device)
    optimizer = make_optimizer(model, config, fused=device.type == "cuda")
    state = State(model, EMA(model, config.ema_decay), optimizer)
    if checkpoint:
        model.load_state_dict(checkpoint["model"])
        state.ema.model.load_state_dict(checkpoint["ema"])
        state.optimizer.load_state_dict(checkpoint["optimizer"])
        state.step = checkpoint["step"]
        state.seconds = checkpoint["summary"].get("train_seconds", 0.0)
        state.seen = checkpoint["summary"].get("action_values_seen", 0)
        state.val = checkpoint.get("metrics", {})
        set_rng_state(checkpoint["rng"])
    return state


def save_checkpoint(path: Path, config: TrainConfig, state: State, order, summary: dict) -> None:
    epoch, index = order.position(state.step)
    summary.update(steps=state.step, epoch=epoch, train_seconds=round(state.seconds, 1))
    summary.update(action_values_seen=state.seen, ema_decay=config.ema_decay)
    checkpoint = {
        "config": state.model.config.to_dict(),
        "preset": config.preset,
        "trained": True,
        "layout": config.layout,
        "model": state.model.state_dict(),
        "ema": state.ema.model.state_dict(),
        "ema_decay": config.ema_decay,
        "optimizer": state.optimizer.state_dict(),
        "step": state.step,
        "data_position": {"epoch": epoch, "batch": index, "seed": config.seed},
        "rng": rng_state(),
        "train_config": asdict(config),
        "summary": dict(summary),
        "metrics": dict(state.val),
    }
    save_atomic(checkpoint, path)


def load_data(config: TrainConfig, info: Dist):
    """(train set, its usable indices, batch order, val set); puzzle positions excluded."""
    train_set = AnnotatedDataset(config.data, split="train", val_percent=config.val_percent)
    val_set = AnnotatedDataset(config.data, split="val", val_percent=config.val_percent)
    excluded: set[bytes] = set()
    for csv_path in config.exclude_puzzles:
        excluded |= puzzle_keys(Path(csv_path))
    indices = training_indices(train_set, excluded)
    lengths = move_counts(train_set, indices)
    order = BatchOrder(lengths, config.batch, config.bucket, config.seed, info.rank, info.world)
    return train_set, indices, order, val_set


def train_step(ddp, state: State, batch: Batch, config: TrainConfig, device, bf16, info):
    """One optimiser step over a batch (in micro-batches); returns (loss sum, hits)."""
    lr = learning_rate(state.step, config)
    for group in state.optimizer.param_groups:
        group["lr"] = lr
    parts = batch.split(config.micro_batch or config.batch)
    total_loss = hits = 0.0
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        sync = contextlib.nullcontext() if last or info.world == 1 else ddp.no_sync()
        with sync:
            with autocast(device, bf16):
                log_probs = forward(ddp, part, config.layout)
            loss = loss_sum(log_probs, part, config)
            (loss / batch.action_values).backward()
        total_loss += float(loss.detach())
        hits += float(action_hits(log_probs.detach(), part.wins, part.mask).sum())
    torch.nn.utils.clip_grad_norm_(state.model.parameters(), config.grad_clip)
    state.optimizer.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.ema.update(state.model, state.step)
    state.step += 1
    return total_loss, hits


def train(config: TrainConfig, resume: bool = True, quiet: bool = False) -> dict:
    """Train (or resume) a model; returns the final checkpoint's summary."""
    info, device = init_distributed(config.device)
    out = Path(config.out)
    bf16 = config.bf16 and bf16_supported(device)
    checkpoint = None
    if resume and (out / CHECKPOINT).exists():
        checkpoint = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=False)
        check_compatible(TrainConfig(**checkpoint["train_config"]), config)
    state = build_state(config, device, checkpoint)
    if checkpoint and info.main and not quiet:
        print(f"resuming {out / CHECKPOINT} from step {state.step}", flush=True)
    ddp = state.model
    if info.world > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(state.model)
    train_set, indices, order, val_set = load_data(config, info)
    summary = {
        "preset": config.preset,
        "parameters": state.model.num_parameters(),
        "layout": config.layout,
        "target": config.target,
        "data": [str(Path(d)) for d in config.data],
        "positions": len(indices),
        "excluded_puzzle_positions": len(train_set) - len(indices),
        "val_positions": len(val_set),
        "batch": config.batch * info.world,
        "lr": config.lr,
        "seed": config.seed,
        "bf16": bf16,
        "world_size": info.world,
        "device": device.type,
    }
    if info.main:
        out.mkdir(parents=True, exist_ok=True)
        trim_metrics(out / METRICS, state.step)
        (out / "train_config.json").write_text(json.dumps(asdict(config), indent=1) + "\n")

    bar = tqdm(total=config.steps, initial=state.step, unit="step", disable=quiet or not info.main)
    window = {"loss": 0.0, "hits": 0.0, "values": 0, "positions": 0}
    clock = time.perf_counter()
    state.model.train()
    while state.step < config.steps:
        batch = collate([train_set[int(indices[i])] for i in order.indices(state.step)])
        loss, hits = train_step(ddp, state, batch.to(device), config, device, bf16, info)
        state.seen += batch.action_values * info.world
        window["loss"] += loss
        window["hits"] += hits
        window["values"] += batch.action_values
        window["positions"] += len(batch.states)
        bar.update(1)
        step, done = state.step, state.step == config.steps

        if step % config.log_every == 0 or done:
            seconds = time.perf_counter() - clock
            state.seconds += seconds
            row = {
                "step": step,
                "split": "train",
                "loss": window["loss"] / max(1, window["values"]),
                "accuracy": window["hits"] / max(1, window["positions"]),
                "lr": learning_rate(step - 1, config),
                "action_values_per_s": round(window["values"] * info.world / seconds, 1),
                "time": round(state.seconds, 1),
            }
            bar.set_postfix(loss=f"{row['loss']:.4f}", av_s=f"{row['action_values_per_s']:,.0f}")
            if info.main:
                append_metrics(out / METRICS, row)
            window = dict.fromkeys(window, 0)
            clock = time.perf_counter()
        paused = time.perf_counter()  # validation and checkpoints are not training time
        if (step % config.eval_every == 0 or done) and info.main and len(val_set):
            val = validate(state.ema.model, val_set, config, device, bf16)
            state.val = {"step": step, "val_loss": val["loss"], "val_accuracy": val["accuracy"]}
            append_metrics(out / METRICS, {"step": step, "split": "val", **val})
            plot_metrics(out / METRICS, out / PLOT)
            bar.write(f"step {step}: val loss {val['loss']:.4f}, accuracy {val['accuracy']:.1%}")
        if (step % config.checkpoint_every == 0 or done) and info.main:
            save_checkpoint(out / CHECKPOINT, config, state, order, summary)
        if info.world > 1 and (
            step % config.eval_every == 0 or step % config.checkpoint_every == 0
        ):
            dist.barrier()
        clock += time.perf_counter() - paused
    bar.close()
    summary["steps"] = state.step
    if info.main and checkpoint and state.step == checkpoint["step"]:
        summary = checkpoint["summary"]  # nothing left to train: report the saved run
    if info.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return summary


def saved_step(path: Path) -> int:
    """The step a checkpoint was saved at."""
    return int(torch.load(path, map_location="cpu", weights_only=False)["step"])


def append_metrics(path: Path, row: dict) -> None:
    with open(path, "a") as file:
        file.write(json.dumps(row) + "\n")


def check_compatible(saved: TrainConfig, wanted: TrainConfig) -> None:
    """Refuse to resume a checkpoint trained with settings that decide the weights differently
    (the step count may grow: resuming with more --steps continues the run)."""
    fixed = ("preset", "layout", "batch", "seed", "target", "sigma", "bucket", "val_percent")
    changed = [
        f"{k}: {getattr(saved, k)} → {getattr(wanted, k)}"
        for k in fixed
        if getattr(saved, k) != getattr(wanted, k)
    ]
    if changed:
        raise SystemExit(
            f"{wanted.out}/{CHECKPOINT} was trained with other settings ({'; '.join(changed)}); "
            "use another --out or --no-resume"
        )


# --------------------------------------------------------------------------- benchmark


def synthetic_batch(positions: int, rng: np.random.Generator) -> Batch:
    """Random positions with a realistic spread of legal-move counts (mean ≈ 35)."""
    from engine.moves import NUM_MOVES
    from engine.tokenizer import VOCAB_SIZE

    counts = np.clip(rng.normal(35, 10, positions).round().astype(int), 1, 80)
    examples = [
        (
            rng.integers(0, VOCAB_SIZE, 77),
            rng.choice(NUM_MOVES, n, replace=False),
            rng.random(n, dtype=np.float32),
        )
        for n in counts
    ]
    return collate(examples)


def benchmark(presets: list[str], batch: int, steps: int, per_move_micro: int = 4) -> list[dict]:
    """Training throughput (action values/s) for each preset × layout × precision.

    Synthetic batches of `batch` positions (≈ 35 legal moves each); forward, backward and AdamW
    are timed after two warm-up steps. Both layouts train the same positions, so the numbers
    compare directly; per_move runs in micro-batches of `per_move_micro` positions (79 tokens
    per move make its activations ~N times larger), shared in one pass.
    """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device {device.type}, {torch.get_num_threads()} threads, batch {batch} positions")
    rows = []
    for preset in presets:
        for layout in LAYOUTS:
            for bf16 in (True, False):
                if bf16 and not bf16_supported(device):
                    continue
                config = TrainConfig(data=[], out="", preset=preset, layout=layout, batch=batch)
                config.micro_batch = per_move_micro if layout == "per_move" else 0
                rows.append(benchmark_one(config, device, bf16, steps))
                print(format_row(rows[-1]), flush=True)
    return rows


def benchmark_one(config: TrainConfig, device: torch.device, bf16: bool, steps: int) -> dict:
    torch.manual_seed(0)
    model = ActionValueModel(PRESETS[config.preset]).to(device).train()
    optimizer = make_optimizer(model, config, fused=device.type == "cuda")
    rng = np.random.default_rng(0)
    batches = [synthetic_batch(config.batch, rng).to(device) for _ in range(2)]
    micro = config.micro_batch or config.batch
    values = 0
    for index in range(steps + 2):
        if index == 2:  # after warm-up
            if device.type == "cuda":
                torch.cuda.synchronize()
            start, values = time.perf_counter(), 0
        batch = batches[index % 2]
        for part in batch.split(micro):
            with autocast(device, bf16):
                log_probs = forward(model, part, config.layout)
            (loss_sum(log_probs, part, config) / batch.action_values).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        values += batch.action_values
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {
        "preset": config.preset,
        "layout": config.layout,
        "precision": "bf16" if bf16 else "fp32",
        "batch": config.batch,
        "action_values_per_s": values / seconds,
        "steps_per_s": steps / seconds,
    }


def format_row(row: dict) -> str:
    return (
        f"{row['preset']:>6}  {row['layout']:>8}  {row['precision']:>4}  "
        f"batch {row['batch']:>4}  {row['action_values_per_s']:>10,.0f} action values/s  "
        f"{row['steps_per_s']:6.2f} steps/s"
    )


# --------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = TrainConfig(data=[], out="")
    parser.add_argument("data", nargs="*", help="annotated shard directories (train split used)")
    parser.add_argument("--out", default="runs/fit", help="checkpoint, metrics and plot directory")
    parser.add_argument("--preset", choices=PRESETS, default=d.preset)
    parser.add_argument("--layout", choices=LAYOUTS, default=d.layout)
    parser.add_argument("--steps", type=int, default=d.steps)
    parser.add_argument("--batch", type=int, default=d.batch, help="positions per step per rank")
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=d.micro_batch,
        help="positions per forward/backward pass (gradient accumulation); 0 = --batch",
    )
    parser.add_argument("--lr", type=float, default=d.lr)
    parser.add_argument("--min-lr-ratio", type=float, default=d.min_lr_ratio)
    parser.add_argument("--warmup", type=int, default=d.warmup, help="warm-up steps")
    parser.add_argument("--weight-decay", type=float, default=d.weight_decay)
    parser.add_argument("--grad-clip", type=float, default=d.grad_clip)
    parser.add_argument("--ema-decay", type=float, default=d.ema_decay)
    parser.add_argument("--target", choices=("hl_gauss", "one_hot"), default=d.target)
    parser.add_argument("--sigma", type=float, default=d.sigma, help="HL-Gauss σ in bin widths")
    parser.add_argument("--bucket", type=int, default=d.bucket, help="bucketing window, batches")
    parser.add_argument("--val-percent", type=float, default=d.val_percent)
    parser.add_argument("--val-positions", type=int, default=d.val_positions)
    parser.add_argument("--eval-every", type=int, default=d.eval_every)
    parser.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every)
    parser.add_argument("--log-every", type=int, default=d.log_every)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bf16 autocast where the hardware supports it (default: on)",
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device)
    parser.add_argument(
        "--exclude-puzzles",
        nargs="*",
        metavar="CSV",
        default=None,
        help="puzzle CSVs whose positions are removed from training "
        f"(default: {DEFAULT_PUZZLES} when it exists)",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="continue from OUT/checkpoint.pt when it exists (default)",
    )
    parser.add_argument("--threads", type=int, help="CPU threads for torch (default: all cores)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--benchmark",
        nargs="*",
        metavar="PRESET",
        default=None,
        help="measure training action values/s, shared vs per_move, bf16 vs fp32 (synthetic "
        "data; default presets: small 9m) and exit",
    )
    parser.add_argument("--benchmark-steps", type=int, default=5)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    excluded = args.exclude_puzzles
    if excluded is None:
        excluded = [str(DEFAULT_PUZZLES)] if DEFAULT_PUZZLES.exists() else []
    names = [f for f in TrainConfig.__dataclass_fields__ if f not in ("data", "exclude_puzzles")]
    return TrainConfig(
        data=list(args.data),
        exclude_puzzles=list(excluded),
        **{name: getattr(args, name) for name in names},
    )


def run(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.benchmark is not None:
        benchmark(
            args.benchmark or ["small", "9m"], args.batch, args.benchmark_steps, args.micro_batch
        )
        return 0
    if not args.data:
        raise SystemExit("give one or more annotated shard directories (oneply train annotate)")
    config = config_from_args(args)
    summary = train(config, resume=args.resume, quiet=args.quiet)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"checkpoint: {Path(config.out) / CHECKPOINT} (step {summary['steps']})")
    return 0

"""Exact resume: the training State, every RNG state, atomic checkpoint writes."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from oneply.engine.files import atomic_path
from oneply.training.fit.config import TrainConfig
from oneply.training.fit.optim import EMA, make_optimizer
from oneply.training.fit.warm_start import InitSource, load_weights
from oneply.training.model.model import ActionValueModel, ModelConfig

if TYPE_CHECKING:  # data_feed reads checkpoints' records; only the type is needed here
    from oneply.training.fit.data_feed import DataFeed


def rng_state() -> dict[str, Any]:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_atomic(obj: object, path: Path) -> None:
    """torch.save to a temporary file, fsync, rename: a killed run never leaves half a file."""
    with atomic_path(path) as tmp, open(tmp, "wb") as file:
        torch.save(obj, file)
        file.flush()
        os.fsync(file.fileno())


def trim_metrics(path: Path, step: int) -> None:
    """Drop metric lines logged after `step` (written after the checkpoint we resume from)."""
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["step"] <= step]
    path.write_text("".join(line + "\n" for line in kept))


@dataclass
class State:
    """What a checkpoint restores: weights, optimiser, EMA, the step and run totals."""

    model: ActionValueModel
    ema: EMA
    optimizer: torch.optim.Optimizer
    step: int = 0
    seconds: float = 0.0  # wall-clock time of the training steps, all sittings
    cpu_seconds: float | None = None  # process-tree CPU of all sittings (None: not measured)
    seen: int = 0  # action values trained on, all ranks
    val: dict[str, Any] = field(default_factory=dict[str, Any])  # the latest validation metrics


def build_state(
    config: TrainConfig,
    device: torch.device,
    model_config: ModelConfig,
    checkpoint: dict[str, Any] | None = None,
    init: InitSource | None = None,
) -> State:
    """A fresh state (from `init`'s weights when given), or the one a checkpoint saved."""
    torch.manual_seed(config.seed)  # same initial weights on every rank
    random.seed(config.seed)
    np.random.seed(config.seed)
    model = ActionValueModel(model_config)
    if init and not checkpoint:
        load_weights(model, init)
    model.to(device)
    fused = device.type == "cuda"
    optimizer = make_optimizer(model, config, fused=fused)
    state = State(model, EMA(model, config.ema_decay), optimizer)
    if checkpoint:
        model.load_state_dict(checkpoint["model"])
        state.ema.model.load_state_dict(checkpoint["ema"])
        saved = checkpoint["optimizer"]
        for group in saved["param_groups"]:  # a CUDA run may resume on a CPU, and back: set
            group["fused"] = fused or None  # before loading, which places `step` by this flag
        state.optimizer.load_state_dict(saved)
        state.step = checkpoint["step"]
        state.seconds = checkpoint["summary"].get("train_seconds", 0.0)
        state.cpu_seconds = checkpoint["summary"].get("train_cpu_seconds")
        state.seen = checkpoint["summary"].get("action_values_seen", 0)
        state.val = checkpoint.get("metrics", {})
        set_rng_state(checkpoint["rng"])
    return state


#: the wall clock the save schedule reads (a test may tick it)
CLOCK: Callable[[], float] = time.monotonic


class SaveSchedule:
    """When the loop saves: every `every` steps, at the last step, and once `minutes` of wall
    clock have passed since the last save. A table row steps at 1 – 3 s beside other work, so
    200 steps can be ten minutes; a machine that goes away between two step-counted saves would
    take them with it. The time rule bounds what a kill costs in minutes, whatever the pace; a
    save at any step resumes exactly (the data order and the schedule are functions of the
    step), so where it lands does not change the weights."""

    def __init__(self, every: int, minutes: float) -> None:
        self.every, self.seconds = every, minutes * 60
        self.last = CLOCK()

    def due(self, step: int, done: bool) -> bool:
        late = self.seconds > 0 and CLOCK() - self.last >= self.seconds
        return done or step % self.every == 0 or late

    def saved(self) -> None:
        self.last = CLOCK()


def save_checkpoint(
    path: Path, config: TrainConfig, state: State, feed: DataFeed, summary: dict[str, Any]
) -> None:
    """Everything a resume needs; `feed` (a DataFeed) gives the data position and segments."""
    position = feed.position(state.step)
    summary.update(steps=state.step, epoch=position["epoch"], train_seconds=round(state.seconds, 1))
    summary.update(action_values_seen=state.seen, ema_decay=config.ema_decay)
    if state.cpu_seconds is not None:
        summary.update(train_cpu_seconds=round(state.cpu_seconds, 1))
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
        "data_position": {**position, "seed": config.seed},
        "segments": feed.recorded(),
        "rng": rng_state(),
        "train_config": asdict(config),
        "summary": dict(summary),
        "metrics": dict(state.val),
    }
    save_atomic(checkpoint, path)


def saved_step(path: Path) -> int:
    """The step a checkpoint was saved at."""
    return int(torch.load(path, map_location="cpu", weights_only=False)["step"])

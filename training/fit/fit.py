"""`oneply train fit`: train the action-value transformer on annotated shards.

``--predictor sv|bc`` trains the paper's other two predictors on the same shards instead:
the position's value (its best move's value, HL-Gauss or one-hot per ``--target``) or the best
move (cross-entropy over the legal moves); training/fit/targets.py. Their loss is per position.

One readable loop (nanoGPT style)::

    for step in range(start, steps):
        batch = next positions of this epoch's permutation      # data order = f(seed, step)
        lr = warm-up + cosine(step)
        loss = cross-entropy(model(batch), HL-Gauss targets)    # masked over padded moves
        loss.backward(); clip(1.0); AdamW.step(); EMA.update()
        every --eval-every steps: validation loss / accuracy on the `val` split and the
                                  dev-puzzle check (EMA weights), into metrics and the plot
        every --rescan-every steps (--follow): new shards start a new data segment
        every --checkpoint-every steps or --checkpoint-minutes: atomic checkpoint (exact resume)

Batches are measured in *positions*. ``shared`` (the default layout) puts all of a position's
legal moves in one sequence, padded to the batch's widest position with move id -1 and masked
out of the loss; ``per_move`` flattens the batch into one 79-token sequence per (position,
move) pair, like the paper. Positions are bucketed by move count inside windows of
``--bucket`` batches so that a batch's padding stays small without giving up shuffling.

Exact resume: the data order is a pure function of (seed, data segment, epoch) and the
checkpoint records each segment's shards (training/fit/data_feed.py), the learning rate is a pure
function of the step, and the checkpoint holds model, AdamW, EMA, step and every RNG state;
so a run killed and resumed ends with the same weights as one that never stopped.

Warm start (``--init``, training/fit/warm_start.py): the weights of a model file or checkpoint,
with a fresh optimiser, schedule and data order; a resumed run keeps its checkpoint's.

Multi-GPU / multi-node: launch with ``torchrun`` (it sets RANK, LOCAL_RANK, WORLD_SIZE). Each
rank trains on its own slice of every global batch (``--batch`` positions per rank); gradients
are averaged by DistributedDataParallel; only rank 0 validates and writes files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from oneply.arena.puzzles import DEV_PUZZLES, Puzzle, read_puzzles
from oneply.engine.errors import CommandError
from oneply.training.data.cpu_clock import CpuMeter
from oneply.training.fit.batch_loader import BatchLoader
from oneply.training.fit.batches import Batch
from oneply.training.fit.checkpoints import (
    SaveSchedule,
    State,
    build_state,
    save_checkpoint,
    trim_metrics,
)
from oneply.training.fit.config import CHECKPOINT, METRICS, PLOT, TrainConfig
from oneply.training.fit.data_feed import DataFeed
from oneply.training.fit.deadline import Deadline
from oneply.training.fit.device import Dist, autocast, bf16_supported, init_distributed
from oneply.training.fit.optim import learning_rate
from oneply.training.fit.options import add_options, from_args
from oneply.training.fit.targets import forward, label_count, objective
from oneply.training.fit.targets import hits as predictor_hits
from oneply.training.fit.train_bench import benchmark
from oneply.training.fit.validation import append_metrics, plot_metrics, puzzle_check, validate
from oneply.training.fit.warm_start import run_architecture
from oneply.training.model.model import LAYOUTS, PRESETS


def train_step(
    ddp: torch.nn.Module,
    state: State,
    batch: Batch,
    config: TrainConfig,
    device: torch.device,
    bf16: bool,
    info: Dist,
) -> tuple[float, float]:
    """One optimiser step over a batch (in micro-batches); returns (loss sum, hits)."""
    lr = learning_rate(state.step, config)
    for group in state.optimizer.param_groups:
        group["lr"] = lr
    parts = batch.split(config.micro_batch or config.batch)
    values = batch.action_values  # one host sync per step, not one per micro-batch (av)
    positions = len(batch.states)
    total_loss = torch.zeros((), device=device)
    hits = torch.zeros((), device=device)
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        wrapped = cast(DistributedDataParallel, ddp)  # world > 1: the model is wrapped
        sync = contextlib.nullcontext() if last or info.world == 1 else wrapped.no_sync()
        with sync:
            with autocast(device, bf16):
                log_probs = forward(ddp, part, config.layout)
            total, loss = objective(log_probs, part, config, values, positions)
            total.backward()
        total_loss += loss.detach()
        hits += predictor_hits(log_probs.detach(), part, config.predictor).sum()
    torch.nn.utils.clip_grad_norm_(state.model.parameters(), config.grad_clip)
    state.optimizer.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.ema.update(state.model, state.step)
    state.step += 1
    return float(total_loss), float(hits)


def train(config: TrainConfig, resume: bool = True, quiet: bool = False) -> dict[str, Any]:
    """Train (or resume) a model; returns the final checkpoint's summary."""
    info, device = init_distributed(config.device)
    if config.hours > 0 and info.world > 1:  # each rank would re-plan its own last step
        raise CommandError("--hours trains in one process; give --steps to a distributed run")
    if config.max_passes > 0 and (info.world > 1 or not config.follow):  # ranks wait apart
        raise CommandError("--max-passes waits for a generator: it needs --follow and one process")
    out = Path(config.out)
    bf16 = config.bf16 and bf16_supported(device)
    checkpoint = None
    if resume and (out / CHECKPOINT).exists():
        checkpoint = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=False)
    config, model_config, init = run_architecture(config, checkpoint)
    state = build_state(config, device, model_config, checkpoint, init)
    if info.main and not quiet:
        if checkpoint:
            print(f"resuming {out / CHECKPOINT} from step {state.step}", flush=True)
        elif init:
            print(f"warm start from {init.path} ({init.preset}: {model_config})", flush=True)
    ddp: torch.nn.Module = state.model
    if info.world > 1:
        ids = [device.index] if device.type == "cuda" else None
        ddp = torch.nn.parallel.DistributedDataParallel(state.model, device_ids=ids)
    if config.compile:  # the checkpoint and the EMA keep the plain module's parameter names
        ddp = cast(torch.nn.Module, torch.compile(ddp, dynamic=True))  # an OptimizedModule
    feed = DataFeed(config, info)
    if checkpoint:
        roots = checkpoint["train_config"]["data"]
        new_segment = feed.start(checkpoint.get("segments"), roots, quiet)
    else:
        new_segment = feed.start(None, quiet=quiet)
    puzzles = check_puzzles(config)
    summary = run_summary(config, state, info, device, bf16) | data_summary(feed)
    if info.main:
        out.mkdir(parents=True, exist_ok=True)
        trim_metrics(out / METRICS, state.step)
        (out / "train_config.json").write_text(json.dumps(asdict(config), indent=1) + "\n")
        if new_segment:
            append_metrics(out / METRICS, feed.describe(state.step))

    deadline = Deadline(config.hours, config.steps, state.step) if config.hours > 0 else None
    bar = tqdm(total=config.steps, initial=state.step, unit="step", disable=quiet or not info.main)
    window = {"loss": 0.0, "hits": 0.0, "values": 0, "positions": 0, "labels": 0}
    clock = time.perf_counter()
    # a run resumed from a checkpoint that predates the meter has no CPU total to carry on
    measured = state.step == 0 or state.cpu_seconds is not None
    cpu = CpuMeter(state.cpu_seconds or 0.0) if measured else None
    state.model.train()
    loader = BatchLoader(feed, model_config.features, config.loader_workers)
    saves = SaveSchedule(config.checkpoint_every, config.checkpoint_minutes)
    while state.step < config.steps:
        if config.max_passes > 0:
            new_data, waited = feed.wait_for_fresh(state.step, time_up(deadline), bar.write)
            clock += waited  # waiting is not training time
            if new_data:
                loader.restart(state.step)
                summary.update(data_summary(feed))
                if info.main:
                    append_metrics(out / METRICS, feed.describe(state.step))
            if deadline is not None and deadline.over():  # this step is the last
                config.steps = bar.total = state.step + 1
        batch = loader.next(state.step)
        loss, hits = train_step(ddp, state, batch.to(device), config, device, bf16, info)
        state.seen += batch.action_values * info.world
        window["loss"] += loss
        window["hits"] += hits
        window["values"] += batch.action_values
        window["positions"] += len(batch.states)
        window["labels"] += label_count(batch, config.predictor)
        bar.update(1)
        if deadline is not None:  # the schedule's end, re-planned from this sitting's pace
            config.steps = bar.total = deadline.steps(state.step)
        step, done = state.step, state.step >= config.steps

        if step % config.log_every == 0 or done:
            seconds = time.perf_counter() - clock
            state.seconds += seconds
            row = train_row(step, window, seconds, state.seconds, config, info.world)
            bar.set_postfix(loss=f"{row['loss']:.4f}", av_s=f"{row['action_values_per_s']:,.0f}")
            if info.main:
                append_metrics(out / METRICS, row)
            window = dict.fromkeys(window, 0)
            clock = time.perf_counter()
        paused = time.perf_counter()  # evaluation, rescans and checkpoints are not training time
        if (step % config.eval_every == 0 or done) and info.main:
            evaluate_ema(state, feed, puzzles, config, device, bf16, out, bar)
        if not done and feed.rescan(step):
            loader.restart(step + 1)
            summary.update(data_summary(feed))
            if info.main:
                append_metrics(out / METRICS, feed.describe(step))
                bar.write(f"step {step}: {feed.describe(step)['shards']} shards, new data")
        if saves.due(step, done) and info.main:
            state.cpu_seconds = cpu.total() if cpu else None
            save_checkpoint(out / CHECKPOINT, config, state, feed, summary)
            saves.saved()
        if info.world > 1 and (
            step % config.eval_every == 0 or step % config.checkpoint_every == 0
        ):
            dist.barrier()
        clock += time.perf_counter() - paused
    bar.close()
    loader.close()
    summary["steps"] = state.step
    if info.main and checkpoint and state.step == checkpoint["step"]:
        summary = checkpoint["summary"]  # nothing left to train: report the saved run
    if info.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return summary


def train_row(
    step: int,
    window: dict[str, float],
    seconds: float,
    elapsed: float,
    config: TrainConfig,
    world: int,
) -> dict[str, Any]:
    """The metrics row of the steps since the last one (`window`, trained in `seconds` on
    each of `world` ranks): mean loss and accuracy, learning rate, speed, time so far."""
    return {
        "step": step,
        "split": "train",
        "loss": window["loss"] / max(1, window["labels"]),
        "accuracy": window["hits"] / max(1, window["positions"]),
        "lr": learning_rate(step - 1, config),
        "action_values_per_s": round(window["values"] * world / seconds, 1),
        "time": round(elapsed, 1),
    }


def run_summary(
    config: TrainConfig, state: State, info: Dist, device: torch.device, bf16: bool
) -> dict[str, Any]:
    """What the checkpoint and the exported model's metadata say about the run."""
    return {
        "preset": config.preset,
        "parameters": state.model.num_parameters(),
        "layout": config.layout,
        "predictor": config.predictor,
        "target": config.target,
        "init": config.init,
        "data": [str(Path(d)) for d in config.data],
        "batch": config.batch * info.world,
        "lr": config.lr,
        "seed": config.seed,
        "bf16": bf16,
        "compile": config.compile,
        "world_size": info.world,
        "device": device.type,
    }


def time_up(deadline: Deadline | None) -> Callable[[], bool]:
    """Whether a waiting run has reached its --hours deadline (never without one)."""
    return deadline.over if deadline is not None else lambda: False


def check_puzzles(config: TrainConfig) -> list[Puzzle]:
    """The evenly spaced puzzles checked at every evaluation (none without --puzzles)."""
    if not config.puzzles or config.eval_puzzles <= 0:
        return []
    if not Path(config.puzzles).is_file():
        raise CommandError(f"--puzzles {config.puzzles}: no such file (or --eval-puzzles 0)")
    return read_puzzles(Path(config.puzzles), config.eval_puzzles)


def data_summary(feed: DataFeed) -> dict[str, Any]:
    return {
        "shards": len(feed.segments[-1].shards),
        "data_segments": len(feed.segments),
        "positions": len(feed.train),
        "excluded_puzzle_positions": feed.excluded_positions,
        "val_positions": len(feed.val),
    }


def evaluate_ema(
    state: State,
    feed: DataFeed,
    puzzles: list[Puzzle],
    config: TrainConfig,
    device: torch.device,
    bf16: bool,
    out: Path,
    bar: tqdm[Any],
) -> None:
    """Validation and the puzzle check on the EMA weights (the ones exported): metrics, plot,
    and the latest numbers kept in the state for the checkpoint and the model's metadata."""
    model = state.ema.model
    step = state.step
    if len(feed.val):
        val = validate(model, feed.val, config, device, bf16)
        state.val.update(step=step, val_loss=val["loss"], val_accuracy=val["accuracy"])
        append_metrics(out / METRICS, {"step": step, "split": "val", **val})
        bar.write(f"step {step}: val loss {val['loss']:.4f}, accuracy {val['accuracy']:.1%}")
    if puzzles:
        check = puzzle_check(model, puzzles, device, config.layout, bf16)
        state.val.update(step=step, puzzle_accuracy=check["accuracy"])
        append_metrics(out / METRICS, {"step": step, "split": "puzzles", **check})
        bar.write(f"step {step}: {check['accuracy']:.1%} of {check['count']} puzzles")
    if len(feed.val) or puzzles:
        plot_metrics(out / METRICS, out / PLOT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """TrainConfig's options (declared on its fields), then the command's own."""
    choices: dict[str, dict[str, object]] = {
        "preset": {"choices": PRESETS},
        "layout": {"choices": LAYOUTS},
    }
    add_options(parser, TrainConfig, choices)
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
    """The run's TrainConfig; the dev puzzles are the default puzzles, and are excluded from
    training, when the file exists."""
    excluded = args.exclude_puzzles
    if excluded is None:
        excluded = [str(DEV_PUZZLES)] if DEV_PUZZLES.exists() else []
    puzzles = args.puzzles
    if puzzles is None:
        puzzles = str(DEV_PUZZLES) if DEV_PUZZLES.exists() else ""
    return from_args(TrainConfig, args, exclude_puzzles=list(excluded), puzzles=puzzles)


def run(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.benchmark is not None:
        benchmark(
            args.benchmark or ["small", "9m"], args.batch, args.benchmark_steps, args.micro_batch
        )
        return 0
    if not args.data:
        raise CommandError("give one or more annotated shard directories (oneply train annotate)")
    config = config_from_args(args)
    if config.predictor != "av" and config.rank_weight:
        raise CommandError("--rank-weight ranks action values: it needs --predictor av")
    summary = train(config, resume=args.resume, quiet=args.quiet)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"checkpoint: {Path(config.out) / CHECKPOINT} (step {summary['steps']})")
    return 0

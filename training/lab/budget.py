"""Equal CPU, labelling counted: how many positions a row of `oneply train ablate --cpu-hours`
may learn from.

Why: the questions left in the sample-efficiency table are about cost, not samples. A
state-value or behavioural-cloning row needs one Stockfish search per position where an
action-value row needs every legal move scored; a deeper label costs more Stockfish time; a
bigger model costs more per step. Comparing them at the same number of positions hides exactly
what differs, so each such row gets the same CPU budget instead, split between labelling the
positions it trains on (fresh data: each position is seen once) and the training itself:

    positions = budget / (label seconds per position + train seconds per position)

The labelling cost is what the generate run recorded (its shards' ``worker_seconds`` over
their positions: the CPU of generate's process tree, training/data/cpu_clock.py; shards of an older
generate recorded wall time × workers, right only on a quiet core). The
training cost is measured, not assumed: two probe runs of the row's own model and settings,
timed in process CPU seconds so that other work on a shared machine does not count, their
difference divided by the positions between them (start-up, data loading, the first steps'
compilation and the closing evaluation cancel out). Those fixed costs are 15 seconds and more on
millions of positions and vary by a second or two between runs, so the long probe grows until
the difference dwarfs that noise: with two fixed lengths, a 0.1M model's twelve extra steps
(about two seconds) once measured as nothing and planned 6.6M positions where 4.4M were paid for.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError

#: the short probe (steps): the fixed costs that the long probe's time is measured past
SHORT_PROBE = 4
#: the long probe's first length (steps); it grows fourfold until its extra time is long enough
LONG_PROBE = 16
#: the long probe's extra CPU-seconds over the short one's that make a measurement
MIN_PROBE_SECONDS = 20.0
#: the longest long probe (steps): beyond it the measurement stands as it is, if positive
MAX_PROBE_STEPS = 1024


def shard_metas(directory: str | Path) -> list[dict[str, Any]]:
    """The meta.json of every shard in a generate directory."""
    return [json.loads(p.read_text()) for p in sorted(Path(directory).glob("*/meta.json"))]


def labels_of(directory: str | Path) -> str:
    """What a directory's shards label: ``all`` (every legal move) or ``best`` (the best move
    and its value, `generate --labels best`)."""
    kinds = {meta.get("labels", "all") for meta in shard_metas(directory)}
    if len(kinds) > 1:
        raise CommandError(f"{directory} mixes labels {sorted(kinds)}: one kind per directory")
    return kinds.pop() if kinds else "all"


def depth_of(directory: str | Path) -> int | None:
    """The Stockfish depth a generate directory labelled at (None: not recorded, e.g. data
    from `annotate` or a node limit)."""
    depths = {m.get("settings", {}).get("game", {}).get("depth") for m in shard_metas(directory)}
    depths.discard(None)
    if len(depths) > 1:
        raise CommandError(f"{directory} mixes label depths {sorted(depths)}")
    return depths.pop() if depths else None


def label_seconds_per_position(directories: list[str]) -> float:
    """Labelling seconds per position recorded by the generate runs of `directories`."""
    seconds, positions = 0.0, 0
    for directory in directories:
        for meta in shard_metas(directory):
            if "worker_seconds" not in meta:
                raise CommandError(
                    f"a shard of {directory} has no worker_seconds (an older generate): "
                    "its labelling cost is unknown, so it cannot be used with --cpu-hours"
                )
            seconds += float(meta["worker_seconds"])
            positions += int(meta.get("count", 0))
    if not positions:
        raise CommandError(f"no labelled positions in {', '.join(directories)}")
    return seconds / positions


def train_seconds_per_position(config: Any) -> float:
    """Process CPU seconds per position of training `config` (a TrainConfig), from probe runs
    in a scratch directory (their weights are thrown away)."""
    from oneply.training.fit.fit import train

    with tempfile.TemporaryDirectory(prefix="oneply-probe-") as scratch:

        def run(steps: int) -> float:
            probe = dataclasses.replace(
                config,
                out=str(Path(scratch) / f"probe-{steps}"),
                steps=steps,
                warmup=1,
                eval_every=10**9,
                checkpoint_every=10**9,
            )
            started = time.process_time()
            train(probe, resume=False, quiet=True)
            return time.process_time() - started

        return probe_cost(run, config.batch)


def probe_cost(
    run: Callable[[int], float],
    batch: int,
    min_seconds: float | None = None,
    max_steps: int = MAX_PROBE_STEPS,
) -> float:
    """Seconds per position from `run(steps)` (the CPU-seconds of a probe that long): the long
    probe's time past the short one's, the long probe lengthened fourfold until that difference
    is at least `min_seconds` (``MIN_PROBE_SECONDS``) or `max_steps` is reached."""
    floor = MIN_PROBE_SECONDS if min_seconds is None else min_seconds
    fixed = run(SHORT_PROBE)
    steps = LONG_PROBE
    extra = run(steps) - fixed
    while extra < floor and steps * 4 <= max_steps:
        steps *= 4
        extra = run(steps) - fixed
    if extra <= 0:
        raise CommandError(
            f"a {steps}-step training probe took no longer than a {SHORT_PROBE}-step one: the "
            "training cost cannot be measured on this machine now (is something else starving "
            "the probe? rerun on a quieter core)"
        )
    return extra / ((steps - SHORT_PROBE) * batch)


def plan(budget_seconds: float, label_cost: float, train_cost: float) -> int:
    """Positions a row learns from when labelling and training share `budget_seconds`."""
    return int(budget_seconds / (label_cost + train_cost))

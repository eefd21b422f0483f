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
their positions: the CPU of generate's process tree, training/cpu_clock.py; shards of an older
generate recorded wall time × workers, right only on a quiet core). The
training cost is measured, not assumed: two short probe runs of the row's own model and
settings (``PROBE_STEPS``), timed in process CPU seconds so that other work on a shared machine
does not count, their difference divided by the positions between them (start-up, data loading
and the first steps' compilation cancel out).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError

#: the two probe lengths (steps): their difference is what is timed
PROBE_STEPS = (4, 16)


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
    """Process CPU seconds per position of training `config` (a TrainConfig), from two probe
    runs in a scratch directory (their weights are thrown away)."""
    from oneply.training.fit import train

    spent = []
    with tempfile.TemporaryDirectory(prefix="oneply-probe-") as scratch:
        for steps in PROBE_STEPS:
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
            spent.append(time.process_time() - started)
    positions = (PROBE_STEPS[1] - PROBE_STEPS[0]) * config.batch
    return max(spent[1] - spent[0], 1e-6) / positions


def plan(budget_seconds: float, label_cost: float, train_cost: float) -> int:
    """Positions a row learns from when labelling and training share `budget_seconds`."""
    return int(budget_seconds / (label_cost + train_cost))

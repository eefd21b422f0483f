"""`oneply train curve RUN [RUN ...]`: a model's strength against the training samples it saw.

A shipped model is often a chain of runs, each warm-started from the one before (``fit
--init``): v2 from scratch, v3 from v2, v4 from v3. Each run's ``metrics.jsonl`` counts steps
from zero, so this puts the runs end to end on one axis, positions seen since the chain began
(``--start`` for what the first run's source had already seen), and plots the evaluations that
ran during training: validation loss (each run on its own val split) and the dev-puzzle check
(plain argmax, the same evenly spaced puzzles at every check).

What more data or compute would buy is read off the slope: the puzzle checks are fitted with a
straight line in log10(positions seen) and the report says how many points another doubling
and another 10× of samples would add at that slope. The slope of a few noisy 200-puzzle checks
is a rough guide, not a promise: it says whether the curve is still rising.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError
from oneply.training.fit.config import METRICS

#: the metric each evaluation row contributes
_KEY = {"val": "loss", "puzzles": "accuracy"}


@dataclass(frozen=True)
class Point:
    run: str
    positions: int  # positions seen since the chain began
    split: str  # "val" or "puzzles"
    value: float  # val loss (nats) or share of puzzles solved


def run_points(run: Path, start: int) -> tuple[list[Point], int]:
    """The run's val and puzzle evaluations on the chain's axis, and the positions it saw."""
    metrics, settings = run / METRICS, run / "train_config.json"
    if not metrics.is_file() or not settings.is_file():
        raise CommandError(f"{run}: no {METRICS} / train_config.json (a `train fit --out` folder)")
    batch = int(json.loads(settings.read_text())["batch"])
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    points = [
        Point(run.name, start + row["step"] * batch, row["split"], row[_KEY[row["split"]]])
        for row in rows
        if row.get("split") in _KEY
    ]
    last = max((row["step"] for row in rows if "step" in row), default=0)
    return points, start + last * batch


def chain(runs: list[Path], start: int) -> list[Point]:
    points: list[Point] = []
    for run in runs:
        mine, start = run_points(run, start)
        points += mine
    return points


@dataclass(frozen=True)
class Trend:
    """Least-squares line of the puzzle checks against log10(positions seen)."""

    slope: float  # share of puzzles per 10x positions
    mean_x: float
    mean_y: float

    def at(self, positions: float) -> float:
        return self.mean_y + self.slope * (math.log10(positions) - self.mean_x)


def puzzle_trend(points: list[Point]) -> Trend | None:
    """The fitted line, or None with fewer than two distinct check points."""
    xy = [
        (math.log10(p.positions), p.value) for p in points if p.split == "puzzles" and p.positions
    ]
    if len({x for x, _ in xy}) < 2:
        return None
    mean_x = sum(x for x, _ in xy) / len(xy)
    mean_y = sum(y for _, y in xy) / len(xy)
    spread = sum((x - mean_x) ** 2 for x, _ in xy)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in xy) / spread
    return Trend(slope, mean_x, mean_y)


def report(points: list[Point]) -> dict[str, Any]:
    """The end of the curve and what the slope says more samples would buy."""
    puzzles = [p for p in points if p.split == "puzzles"]
    val = [p for p in points if p.split == "val"]
    trend = puzzle_trend(points)
    slope = trend.slope if trend else None
    return {
        "positions_seen": max((p.positions for p in points), default=0),
        "val_loss": val[-1].value if val else None,
        "puzzles": puzzles[-1].value if puzzles else None,
        "puzzles_per_doubling": slope * math.log10(2) if slope is not None else None,
        "puzzles_per_10x": slope,
    }


def plot(points: list[Point], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_val, ax_puz) = plt.subplots(1, 2, figsize=(12, 4.2))
    runs = list(dict.fromkeys(p.run for p in points))
    for run in runs:
        for ax, split, style in ((ax_val, "val", "o-"), (ax_puz, "puzzles", "s-")):
            mine = [p for p in points if p.run == run and p.split == split]
            if mine:
                ax.plot(
                    [p.positions for p in mine], [p.value for p in mine], style, ms=3, label=run
                )
    trend = puzzle_trend(points)
    if trend:
        seen = [p.positions for p in points if p.split == "puzzles" and p.positions]
        far = [min(seen), max(seen) * 10]
        label = f"trend: {trend.slope:+.1%} per 10x samples"
        ax_puz.plot(far, [trend.at(x) for x in far], "k--", lw=1, label=label)
    ax_val.set(xlabel="positions seen", ylabel="nats", title="validation loss (each run's split)")
    ax_puz.set(xlabel="positions seen", ylabel="solved", title="dev puzzles, plain argmax (EMA)")
    for ax in (ax_val, ax_puz):
        ax.set_xscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, help="fit --out folders, oldest first")
    parser.add_argument(
        "--start", type=int, default=0, help="positions the first run's --init source had seen"
    )
    parser.add_argument("--plot", type=Path, help="write the curve as a PNG")
    parser.add_argument("--json", type=Path, help="write the points and the report as JSON")


def run(args: argparse.Namespace) -> int:
    points = chain(list(args.runs), args.start)
    if not points:
        raise CommandError("no val or puzzle evaluations in these runs' metrics")
    summary = report(points)
    for key, value in summary.items():
        shown = "-" if value is None else f"{value:,.4f}" if isinstance(value, float) else value
        print(f"{key:<26} {shown}")
    if args.plot:
        plot(points, args.plot)
    if args.json:
        rows = [p.__dict__ for p in points]
        args.json.write_text(json.dumps({"report": summary, "points": rows}, indent=1) + "\n")
    return 0

"""`oneply train curve`: runs chained end to end by positions seen, the log-slope report."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from oneply.engine.errors import CommandError
from oneply.training.lab.curve import chain, puzzle_trend, report, run_points


def fake_run(root: Path, name: str, batch: int, evals: list[tuple[int, float, float]]) -> Path:
    """A `fit --out` folder with train rows and (step, val loss, puzzles) evaluations."""
    run = root / name
    run.mkdir(parents=True)
    (run / "train_config.json").write_text(json.dumps({"batch": batch, "steps": evals[-1][0]}))
    rows = [{"step": 0, "split": "data", "shards": 3}]
    for step, loss, solved in evals:
        rows.append({"step": step, "split": "train", "loss": loss + 0.1, "accuracy": 0.2})
        rows.append({"step": step, "split": "val", "loss": loss, "accuracy": 0.2})
        rows.append({"step": step, "split": "puzzles", "accuracy": solved, "count": 200})
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_runs_are_put_end_to_end_on_positions_seen(tmp_path: Path) -> None:
    first = fake_run(tmp_path, "v3", 128, [(100, 4.0, 0.05), (200, 3.9, 0.06)])
    second = fake_run(tmp_path, "v4", 64, [(50, 3.8, 0.07), (300, 3.7, 0.08)])
    points = chain([first, second], start=1000)
    puzzles = [(p.run, p.positions, p.value) for p in points if p.split == "puzzles"]
    assert puzzles == [
        ("v3", 1000 + 100 * 128, 0.05),
        ("v3", 1000 + 200 * 128, 0.06),
        ("v4", 1000 + 200 * 128 + 50 * 64, 0.07),
        ("v4", 1000 + 200 * 128 + 300 * 64, 0.08),
    ]
    assert [p.value for p in points if p.split == "val"] == [4.0, 3.9, 3.8, 3.7]
    summary = report(points)
    assert summary["positions_seen"] == 1000 + 200 * 128 + 300 * 64
    assert summary["val_loss"] == 3.7 and summary["puzzles"] == 0.08


def test_the_slope_is_per_decade_of_samples(tmp_path: Path) -> None:
    # +2 points per 10x: 1k → 10%, 10k → 12%, 100k → 14%
    run = fake_run(
        tmp_path, "r", 1, [(1_000, 4.0, 0.10), (10_000, 3.9, 0.12), (100_000, 3.8, 0.14)]
    )
    points, seen = run_points(run, 0)
    assert seen == 100_000
    trend = puzzle_trend(points)
    assert trend is not None and trend.slope == pytest.approx(0.02)
    assert trend.at(1_000_000) == pytest.approx(0.16)
    summary = report(points)
    assert summary["puzzles_per_doubling"] == pytest.approx(0.02 * math.log10(2))
    flat = fake_run(tmp_path, "one", 1, [(10, 4.0, 0.1)])
    assert puzzle_trend(run_points(flat, 0)[0]) is None  # one check: no slope


def test_a_folder_that_is_not_a_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="train fit --out"):
        run_points(tmp_path, 0)


def test_the_command_prints_the_report_and_writes_plot_and_json(tmp_path: Path) -> None:
    run = fake_run(tmp_path, "v4", 128, [(100, 4.0, 0.05), (1000, 3.9, 0.08)])
    png, out = tmp_path / "curve.png", tmp_path / "curve.json"
    command = [sys.executable, "-m", "oneply.engine.cli", "train", "curve", str(run)]
    done = subprocess.run(
        [*command, "--start", "5000", "--plot", str(png), "--json", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "puzzles_per_10x" in done.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(out.read_text())
    assert saved["report"]["positions_seen"] == 5000 + 1000 * 128
    assert len(saved["points"]) == 4

"""`oneply train all`: positions → annotate → fit → export → eval in one resumable command.

Everything lives under one directory (``--out``, default ``runs/PRESET``)::

    positions.txt         unique FENs (oneply train positions), + .manifest.json
    annotated/            Stockfish-scored shards (oneply train annotate)
    train/                checkpoint.pt, metrics.jsonl, training.png (oneply train fit)
    model.onnx            EMA weights, with the training summary and eval metrics embedded
    report.json           the evaluation (oneply eval) of model.onnx

Each step runs in this process through its module's own ``run(args)``, and each is resumable
on its own: the positions file is extended to ``--positions``, finished shards are skipped,
training continues from its checkpoint. A step whose output is already complete is skipped,
so rerunning the command after an interruption (or after it finished) does only what is left.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.cli import read_args, run_reporting
from oneply.engine.errors import CommandError
from oneply.engine.files import atomic_path


@dataclass(frozen=True)
class Scale:
    """Defaults per preset: enough data and steps to be worth running at that size."""

    positions: int
    steps: int
    batch: int


SCALES = {
    "tiny": Scale(positions=2_000, steps=300, batch=64),
    "small": Scale(positions=20_000, steps=3_000, batch=128),
    "9m": Scale(positions=200_000, steps=20_000, batch=256),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=SCALES, default="tiny")
    parser.add_argument("--out", type=Path, help="run directory (default runs/PRESET)")
    defaults = "; ".join(
        f"{k}: {v.positions} positions, {v.steps} steps" for k, v in SCALES.items()
    )
    parser.epilog = f"defaults per preset: {defaults}"
    parser.add_argument("--positions", type=int, help="positions to generate and annotate")
    parser.add_argument("--depth", type=int, default=8, help="Stockfish depth per position")
    parser.add_argument("--steps", type=int, help="training steps")
    parser.add_argument("--batch", type=int, help="positions per training step")
    parser.add_argument("--layout", choices=("shared", "per_move"), default="shared")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--val-percent", type=float, default=5.0)
    parser.add_argument("--puzzles", type=Path, default=DEV_PUZZLES, help="eval puzzle CSV")
    parser.add_argument("--puzzle-limit", type=int, help="evaluate on at most N puzzles")
    parser.add_argument("--eval-limit", type=int, help="evaluate on at most N val positions")
    parser.add_argument("--quiet", action="store_true", help="no training progress bar")


@dataclass(frozen=True)
class PipelineConfig:
    """One `train all` run, read once from its command line (help: :func:`add_arguments`),
    the preset's scale filled in where an option was left out."""

    preset: str
    out: Path
    positions: int
    depth: int
    steps: int
    batch: int
    layout: str
    workers: int
    seed: int
    val_percent: float
    puzzles: Path
    puzzle_limit: int | None = None
    eval_limit: int | None = None
    quiet: bool = False


def pipeline_config(args: argparse.Namespace) -> PipelineConfig:
    """The run the parsed command line asks for; a preset's scale where no option says."""
    scale = SCALES[args.preset]
    return read_args(
        PipelineConfig,
        args,
        out=args.out or Path("runs") / args.preset,
        positions=args.positions or scale.positions,
        steps=args.steps or scale.steps,
        batch=args.batch or scale.batch,
    )


def _step_args(module: ModuleType, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=module.__name__)
    module.add_arguments(parser)
    return parser.parse_args(argv)


def _call(module: ModuleType, argv: list[str]) -> None:
    """Run a step module's own command line in this process; stop the pipeline if it fails."""
    code = run_reporting(module.run, _step_args(module, argv))
    if code:
        raise CommandError(
            f"oneply train all: step {module.__name__} failed (exit {code})", exit_code=code
        )


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path) as file:
        return sum(1 for line in file if line.strip())


def make_positions(config: PipelineConfig) -> Path:
    from oneply.training.data import positions

    out, count = config.out, config.positions
    path = out / "positions.txt"
    _banner(f"positions: {path}")
    if _line_count(path) >= count:
        print(f"skip: {path} holds {_line_count(path)} positions (>= {count})")
        return path
    argv = ["--out", str(path), "--count", str(count), "--seed", str(config.seed)]
    argv += ["--exclude", str(config.puzzles)]  # the puzzles fit excludes and eval solves
    _call(positions, argv + ["--workers", str(config.workers)])
    return path


def annotation_complete(shards: Path, positions: int, depth: int) -> bool:
    """Every chunk of the positions file is annotated, at the requested depth."""
    try:
        manifest = json.loads((shards / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    chunks = math.ceil(positions / manifest.get("chunk_size", 1))
    return bool(
        manifest.get("limit", {}).get("depth") == depth
        and manifest.get("total_chunks") == chunks
        and manifest.get("chunks_done") == chunks
    )


def annotate(positions_file: Path, config: PipelineConfig) -> Path:
    from oneply.training.data import annotate as annotate_module

    shards = config.out / "annotated"
    _banner(f"annotate: {shards}")
    if annotation_complete(shards, _line_count(positions_file), config.depth):
        print(f"skip: every chunk of {positions_file} is annotated")
        return shards
    argv = [str(positions_file), "--out", str(shards), "--depth", str(config.depth)]
    _call(annotate_module, argv + ["--workers", str(config.workers)])
    return shards


def fit(shards: Path, config: PipelineConfig) -> Path:
    from oneply.training.data.dataset import AnnotatedDataset
    from oneply.training.fit import fit as fit_module
    from oneply.training.fit.checkpoints import saved_step
    from oneply.training.fit.config import CHECKPOINT

    train_dir = config.out / "train"
    _banner(f"fit: {train_dir}")
    steps = config.steps
    checkpoint = train_dir / CHECKPOINT
    if checkpoint.exists() and saved_step(checkpoint) >= steps:
        print(f"skip: {checkpoint} has trained {steps} steps")
        return checkpoint
    train_positions = len(AnnotatedDataset(shards, split="train", val_percent=config.val_percent))
    batch = min(config.batch, train_positions)  # small data sets: one batch = all
    every = str(max(1, min(200, steps // 5)))
    argv = [str(shards), "--out", str(train_dir), "--preset", config.preset, "--steps", str(steps)]
    argv += ["--batch", str(batch), "--layout", config.layout, "--seed", str(config.seed)]
    argv += ["--val-percent", str(config.val_percent), "--eval-every", every]
    argv += ["--checkpoint-every", every, "--log-every", str(max(1, min(10, steps // 10)))]
    argv += ["--warmup", str(min(100, max(1, steps // 10)))]
    argv += ["--exclude-puzzles", str(config.puzzles), "--puzzles", str(config.puzzles)]
    _call(fit_module, argv + (["--quiet"] if config.quiet else []))
    return checkpoint


def export_and_evaluate(
    checkpoint_path: Path, shards: Path, config: PipelineConfig
) -> tuple[Path, Path]:
    """Export the EMA weights, evaluate them, and export again with the metrics embedded."""
    from oneply.training.fit.evaluate import evaluate_model, format_report
    from oneply.training.model.export import export_model, load_checkpoint_model

    out = config.out
    model_path, report_path = out / "model.onnx", out / "report.json"
    _banner(f"export + eval: {model_path}")
    model, checkpoint = load_checkpoint_model(checkpoint_path)
    if report_path.exists() and model_path.exists():
        previous = json.loads(report_path.read_text())
        if previous.get("training", {}).get("steps") == checkpoint["step"]:
            print(f"skip: {model_path} and {report_path} are up to date")
            print(format_report(previous["evaluation"]))
            return model_path, report_path

    summary = checkpoint.get("summary", {})
    options = {"preset": checkpoint["preset"], "layout": config.layout, "training": summary}
    draft = out / ".model.unevaluated.onnx"
    export_model(model, draft, **options)
    evaluation = evaluate_model(
        draft,
        data=[shards],
        split="val",
        puzzles=config.puzzles,
        limit=config.eval_limit,
        puzzle_limit=config.puzzle_limit,
        val_percent=config.val_percent,
    )
    evaluation["model"] = str(model_path)
    evaluation["model_info"] = evaluation["model_info"].replace(draft.name, model_path.name)
    metrics = embedded_metrics(evaluation, checkpoint.get("metrics", {}))
    with atomic_path(model_path) as final:
        export_model(model, final, **options, metrics=metrics)
    draft.unlink(missing_ok=True)

    report = {
        "model": str(model_path),
        "checkpoint": str(checkpoint_path),
        "plot": str(checkpoint_path.parent / "training.png"),
        "training": summary,
        "evaluation": evaluation,
    }
    report_path.write_text(json.dumps(report, indent=1) + "\n")
    print(format_report(evaluation))
    return model_path, report_path


def embedded_metrics(evaluation: dict[str, Any], training_val: dict[str, Any]) -> dict[str, Any]:
    """The compact metrics that travel inside the ONNX file."""
    metrics = {"train_val": training_val}
    if evaluation.get("positions"):
        metrics["val"] = evaluation["positions"]
    if "puzzles" in evaluation:
        puzzles = evaluation["puzzles"]
        metrics["puzzles"] = {
            "file": Path(puzzles["file"]).name,
            "count": puzzles["count"],
            "accuracy": puzzles["accuracy"],
            "bands": {band: row["accuracy"] for band, row in puzzles["bands"].items()},
        }
    return metrics


def run(args: argparse.Namespace) -> int:
    if not args.puzzles.is_file():
        raise CommandError(f"oneply train all: puzzle file {args.puzzles} not found", exit_code=2)
    config = pipeline_config(args)
    config.out.mkdir(parents=True, exist_ok=True)
    positions_file = make_positions(config)
    shards = annotate(positions_file, config)
    checkpoint = fit(shards, config)
    model_path, report_path = export_and_evaluate(checkpoint, shards, config)
    print(f"\nmodel:  {model_path}\nreport: {report_path}")
    print(f"plot:   {checkpoint.parent / 'training.png'}")
    print(
        f"play:   oneply uci --model {model_path}", file=sys.stderr if config.quiet else sys.stdout
    )
    return 0

"""`oneply train ablate`: the sample-efficiency table.

Variants of the model and of its training, each trained from scratch under one fixed budget —
the same data, the same seed, the same number of positions seen — and each measured the same
way: validation loss, action accuracy and Kendall τ on the data's `val` split, plain-argmax
accuracy on the dev puzzles, and a short match against the built-in ``greedy`` capture-grabber.

Why a budget of positions and not of wall-clock time: on a shared 2-core machine the time a
step takes depends on whatever else runs, while the positions a run has learnt from do not; the
training seconds are still reported, so a variant that is slower per position shows it.

With ``--cpu-hours H`` the rows get a budget of CPU time instead, labelling counted
(training/lab/budget.py): the rows that differ in cost — the predictors (``sv``/``bc`` learn from
`generate --labels best` data when a data directory holds it, one Stockfish search per position
instead of every legal move scored), label depth, model size — are compared at what they cost.
Every row is measured on the same validation split: that of the every-move data directories.

Every variant lives in ``OUT/<name>/``: its initial weights (``init.pt``), the `fit` run
(checkpoints, so a killed ablation resumes), the exported model and ``result.json``. A finished
variant is skipped on the next call, so two processes can share the work with ``--only`` and
any call prints the table of everything finished so far (``table.md``, ``table.json``,
``ablation.png``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.errors import CommandError
from oneply.training.fit.options import add_options, from_args, option
from oneply.training.lab.ablation_variants import (
    BASE_MODEL,
    BASE_PRESET,
    BASE_TRAIN,
    ROUND_3,
    VARIANTS,
    Variant,
    supported,
    variant_named,
)
from oneply.training.lab.budget import (
    depth_of,
    label_seconds_per_position,
    labels_of,
    plan,
    shard_metas,
    train_seconds_per_position,
)

if TYPE_CHECKING:
    from oneply.training.fit.config import TrainConfig

# --------------------------------------------------------------------------- one variant


def write_init(variant: Variant, path: Path, seed: int, preset: str = BASE_PRESET) -> int:
    """The variant's initial weights as a warm-start checkpoint (`fit --init`); returns the
    parameter count. Seeded, so every variant's shared parts start the same way."""
    import torch

    from oneply.training.model.model import PRESETS, ActionValueModel

    config = dataclasses.replace(PRESETS[preset], **{**BASE_MODEL, **variant.model})
    torch.manual_seed(seed)
    model = ActionValueModel(config)
    if variant.zero_positions:
        with torch.no_grad():
            model.pos_embed.zero_()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config.to_dict(), "model": model.state_dict(), "preset": "custom"}, path)
    return model.num_parameters()


def row_data(variant: Variant, directories: list[str]) -> list[str]:
    """The directories a row learns from (those labelled at its depth; data that does not say
    its depth counts as any): an action-value row needs every move labelled; a
    state-value or behavioural-cloning row takes `--labels best` data when there is some (what
    it costs to label is what it needs), else the every-move data (their targets derive from
    it)."""
    by_kind: dict[str, list[str]] = {}
    for directory in directories:
        if depth_of(directory) in (None, variant.depth):
            by_kind.setdefault(labels_of(directory), []).append(directory)
    if variant.train.get("predictor", "av") != "av" and by_kind.get("best"):
        return by_kind["best"]
    if not by_kind.get("all"):
        raise CommandError(
            f"{variant.name} needs every move labelled at depth {variant.depth}: give a "
            f"directory that `generate --depth {variant.depth}` wrote without --labels best"
        )
    return by_kind["all"]


def train_config(
    variant: Variant, ablation: AblationConfig, out: Path, positions: int
) -> TrainConfig:
    """The variant's `fit` settings: the base run's, its overrides, and the steps that make
    `positions` at its batch size."""
    from oneply.training.fit.config import TrainConfig

    settings = {**BASE_TRAIN, **variant.train}
    steps = max(1, positions // settings["batch"])
    settings.setdefault("warmup", max(1, steps // 20))
    return TrainConfig(
        data=row_data(variant, list(ablation.data)),
        out=str(out / "fit"),
        steps=steps,
        init=str(out / "init.pt"),
        seed=ablation.seed,
        eval_every=max(1, steps // 4),
        checkpoint_every=max(1, steps // 8),
        exclude_puzzles=[str(DEV_PUZZLES)],
        puzzles="",
        **settings,
    )


def opponent_scores(model: Path, greedy: int, skill: int, seed: int) -> dict[str, dict[str, Any]]:
    """W/D/L against the built-in greedy opponent and Stockfish skill 0, through the strength
    suite's match code (opponents with 0 games are left out)."""
    from oneply.arena import strength

    parser = argparse.ArgumentParser()
    strength.add_arguments(parser)
    args = parser.parse_args(
        [str(model), "--games-random", "0", "--games-greedy", str(greedy)]
        + ["--games-skill", str(skill), "--games-per-level", "0", "--puzzle-limit", "0"]
        + ["--seed", str(seed), "--quiet"]
    )
    result = strength.SuiteResult(str(model))
    strength.play_opponents(strength.strength_config(args), str(model), result)
    return {
        played.name: {
            "wins": played.wins,
            "draws": played.draws,
            "losses": played.losses,
            "score": (played.wins + 0.5 * played.draws) / max(1, played.games),
        }
        for played in result.opponents
    }


def run_variant(variant: Variant, config: AblationConfig) -> dict[str, Any]:
    """Train, export and measure one variant (resuming whatever an earlier call left)."""
    from oneply.training.fit.evaluate import evaluate_model
    from oneply.training.fit.fit import train
    from oneply.training.model.export import export_model, load_checkpoint_model

    out = Path(config.out) / variant.name
    if not (out / "init.pt").exists():
        write_init(variant, out / "init.pt", config.seed, config.preset)
    costs = row_costs(variant, config, out)
    fit_config = train_config(variant, config, out, costs.get("positions", config.positions))
    started = time.perf_counter()
    summary = train(fit_config, resume=True, quiet=config.quiet)
    model, checkpoint = load_checkpoint_model(out / "fit" / "checkpoint.pt")
    onnx_path = out / "model.onnx"
    export_model(model, onnx_path, preset=variant.name, training=summary)
    report = evaluate_model(
        onnx_path,
        data=list[str | Path](row_data(variant_named("facts"), list(config.data))),  # one val split
        limit=config.val_positions,
        puzzle_limit=config.puzzle_limit,
        threads=config.threads,
    )
    positions, puzzles = report.get("positions", {}), report.get("puzzles", {})
    result = {
        "variant": variant.name,
        "what": variant.what,
        "parameters": model.num_parameters(),
        "steps": fit_config.steps,
        "batch": fit_config.batch,
        "positions_seen": fit_config.steps * fit_config.batch,
        "train_seconds": round(checkpoint["summary"].get("train_seconds", 0.0), 1),
        **costs,
        "val_loss": checkpoint.get("metrics", {}).get("val_loss"),
        "accuracy": positions.get("action_accuracy"),
        "kendall_tau": positions.get("kendall_tau"),
        "log_loss": positions.get("log_loss"),
        "puzzles": puzzles.get("accuracy"),
        **_games(onnx_path, config),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def row_costs(variant: Variant, config: AblationConfig, out: Path) -> dict[str, Any]:
    """With --cpu-hours: the row's positions for its budget, and the labelling and training
    CPU-seconds they cost (planned once, in ``plan.json``, so a resumed row keeps its plan).
    Without it: nothing (the rows share --positions)."""
    if config.cpu_hours is None:
        return {}
    path = out / "plan.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    label_cost = label_seconds_per_position(row_data(variant, list(config.data)))
    probe = train_config(variant, config, out, config.positions)
    train_cost = train_seconds_per_position(probe)
    budget = config.cpu_hours * 3600
    positions = plan(budget, label_cost, train_cost)
    held = sum(int(m.get("count", 0)) for d in probe.data for m in shard_metas(d))
    if positions > held:  # fresh data only: a second pass would be bought without labelling
        raise CommandError(
            f"{variant.name}: {config.cpu_hours} CPU-hours pay for {positions:,} positions and "
            f"{', '.join(probe.data)} hold {held:,}: label more (train generate) or lower "
            "--cpu-hours"
        )
    costs = {
        "cpu_hours": config.cpu_hours,
        "positions": positions,
        "label_cost": label_cost,
        "train_cost": train_cost,
        "label_cpu_seconds": round(positions * label_cost, 1),
        "train_cpu_seconds": round(positions * train_cost, 1),
    }
    path.write_text(json.dumps(costs, indent=1) + "\n")
    return costs


def _games(model: Path, config: AblationConfig) -> dict[str, Any]:
    scores = opponent_scores(model, config.games, config.games_skill, config.seed)
    return {"greedy": scores.get("greedy"), "skill0": scores.get("sf-skill0")}


# --------------------------------------------------------------------------- the table


def finished(out: Path) -> list[dict[str, Any]]:
    """The results of every finished variant, in table order."""
    rows = []
    for variant in VARIANTS:
        path = out / variant.name / "result.json"
        if path.exists():
            rows.append(json.loads(path.read_text()))
    return rows


def shared_val_loss(row: dict[str, Any]) -> float | None:
    """The row's loss on the table's one validation split (that of the every-move depth-2 data).

    `val_loss` is the fit's own, on a split of the data the row learns from: the same split for
    most rows, but the depth rows learn from (and the fit measures on) other labels, so the table
    compares the evaluation's `log_loss` on the shared split; rows written before it was kept
    fall back to the fit's.
    """
    shared = row.get("log_loss")
    loss = row["val_loss"] if shared is None else shared
    return None if loss is None else float(loss)


def _cell(value: float | None, pattern: str) -> str:
    return "–" if value is None else format(value, pattern)


def _games_cell(g: dict[str, Any] | None) -> str:
    return f"{g['score']:.0%} ({g['wins']}/{g['draws']}/{g['losses']})" if g else "–"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table as GitHub markdown (docs, model card, terminal)."""
    lines = [
        "| variant | what changes | params | steps x batch | train s | label s | val loss "
        "| accuracy | Kendall τ | dev puzzles | vs greedy (W/D/L) | vs sf-skill0 (W/D/L) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        greedy, skill = _games_cell(r.get("greedy")), _games_cell(r.get("skill0"))
        lines.append(
            f"| {r['variant']} | {r['what']} | {r['parameters'] / 1e6:.2f}M "
            f"| {r['steps']} x {r['batch']} | {r['train_seconds']:.0f} "
            f"| {_cell(r.get('label_cpu_seconds'), '.0f')} | {_cell(shared_val_loss(r), '.3f')} "
            f"| {_cell(r['accuracy'], '.1%')} "
            f"| {_cell(r['kendall_tau'], '.3f')} | {_cell(r['puzzles'], '.1%')} | {greedy} "
            f"| {skill} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Validation loss, puzzles and greedy score per variant, as bars (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["variant"] for r in rows]
    panels = (
        ("val loss (nats, lower is better)", [shared_val_loss(r) or 0.0 for r in rows]),
        ("dev puzzles, argmax", [r["puzzles"] or 0.0 for r in rows]),
        ("score vs greedy", [(r["greedy"] or {}).get("score", 0.0) for r in rows]),
    )
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, (title, values) in zip(axes, panels, strict=True):
        ax.barh(names[::-1], values[::-1], color="tab:blue")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    losses = [v for v in panels[0][1] if v]
    if losses:  # the rows differ in the second decimal: zoom in on them
        spread = max(losses) - min(losses)
        axes[0].set_xlim(min(losses) - max(spread, 0.05), max(losses) + max(spread, 0.05) / 4)
    positions, hours = rows[0]["positions_seen"], rows[0].get("cpu_hours")
    fig.suptitle(
        f"oneply train ablate: each row given {hours} CPU-hours, labelling counted"
        if hours
        else f"oneply train ablate: every variant trained on {positions:,} positions"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: Path) -> str:
    rows = finished(out)
    text = markdown(rows)
    (out / "table.md").write_text(text + "\n")
    (out / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    if rows:
        plot(rows, out / "ablation.png")
    return text


# --------------------------------------------------------------------------- CLI


@dataclasses.dataclass(frozen=True)
class AblationConfig:
    """What one `oneply train ablate` call is told: each field is also one of its options
    (training/fit/options.py), in the order `--help` lists them."""

    data: list[str] = option(
        "annotated shard directories (fixed while it runs)",
        positional=True,
        nargs="+",
        required=True,
    )
    out: str = option("one folder per variant, the table", default="runs/ablate")
    positions: int = option("training positions per variant (76,800)", default=76_800)
    cpu_hours: float | None = option(
        "instead of --positions: a CPU budget per row, labelling counted (training/"
        "budget.py); rows learn from as many fresh positions as it pays for"
    )
    games: int = option("games vs greedy (0: none)", default=20)
    games_skill: int = option("games vs Stockfish skill 0 (default 0: none)", default=0)
    val_positions: int = option(default=2048)
    puzzle_limit: int | None = option("dev puzzles, evenly spaced (all)")
    preset: str = option(f"base architecture ({BASE_PRESET})", default=BASE_PRESET)
    only: str | None = option(
        "comma-separated variant names, or `round3` for issue 81's geometry, shape, "
        "widening and size rows (default: all)"
    )
    seed: int = option(default=0)
    threads: int | None = option("torch and onnxruntime threads")
    report: bool = option("only print the table so far", default=False, action="store_true")
    quiet: bool = option("no progress bars", default=False, action="store_true")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "variants:\n" + "\n".join(f"  {v.name:<10} {v.what}" for v in VARIANTS)
    add_options(parser, AblationConfig)


def chosen_names(only: str) -> list[str]:
    """``--only``'s names, ``round3`` standing for the rows of issue 81's table."""
    names: list[str] = []
    for name in only.split(","):
        names += list(ROUND_3) if name == "round3" else [name]
    return names


def run(args: argparse.Namespace) -> int:
    import torch

    config = from_args(AblationConfig, args)
    if config.threads:
        torch.set_num_threads(config.threads)
    missing = [d for d in config.data if not Path(d).is_dir()]
    if missing:
        raise CommandError(f"no such data directory: {', '.join(missing)}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = (
        [variant_named(n) for n in chosen_names(config.only)] if config.only else list(VARIANTS)
    )
    for variant in [] if config.report else chosen:
        if (out / variant.name / "result.json").exists():
            continue
        if not supported(variant):
            print(f"skipping {variant.name}: this oneply's model has no {sorted(variant.model)}")
            continue
        print(f"== {variant.name}: {variant.what}", flush=True)
        run_variant(variant, config)
        print(write_report(out), flush=True)
    print(write_report(out))
    print(f"wrote {out / 'table.md'}, {out / 'table.json'}, {out / 'ablation.png'}")
    return 0

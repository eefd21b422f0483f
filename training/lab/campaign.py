"""`oneply train campaign`: the training that never stops, across sessions and machines.

Why: strength on two CPU cores comes from CPU-hours, and a session lasts a few hours on a
machine that the next session may not have. So every session starts (or resumes) one run:
Stockfish labels fresh positions on one core (`train generate`) while the trainer follows them
on the other (`train fit --follow`), warm-started from the campaign's latest weights. At the
end of the session `save` exports those weights to runs/ (`--weights`) and adds the
session's row to the committed ledger: positions labelled and trained on, labelling and
training CPU-seconds, and what the model measured then. The ledger's plot is the campaign's
strength-against-CPU-hours curve (labelling and training apart), so anyone can read what the
next hours would buy; it is drawn from the ledger (`plot`), never committed. Weights are
committed only when they ship or are a rated candidate (`save --publish`): a session's
weights do not bloat the repository's history. The bundled default model changes only when
the strength suite says a campaign model is stronger (docs/training.md, "The campaign").

    oneply train campaign start            # two background processes, logs in runs/campaign/
    oneply train campaign save             # runs/campaign-latest/latest.onnx, ledger.json, PNG
    oneply train campaign rate --suite RUN.json   # the row's suite games, on the curve too
    oneply train campaign plot             # models/campaign/campaign.png, from the ledger

A change is measured as a paired fork (`start --fork "FIT ARGS"`, training/lab/campaign_fork.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError
from oneply.engine.model.model_file import REFERENCE_MODEL, REPO_ROOT
from oneply.training.data.dataset import find_shards
from oneply.training.fit.options import add_options, from_args
from oneply.training.lab import campaign_rating
from oneply.training.lab.campaign_config import LEDGER_DIR as LEDGER_DIR  # the ledger's home
from oneply.training.lab.campaign_config import MAX_PASSES as MAX_PASSES
from oneply.training.lab.campaign_config import WEIGHTS_DIR as WEIGHTS_DIR
from oneply.training.lab.campaign_config import CampaignConfig
from oneply.training.lab.campaign_curve import (
    FIRST_LINEAGE,
    cumulative,
    format_point,
    lineage,
    plot,
)
from oneply.training.lab.campaign_fork import (
    FORK_MODEL,
    ForkRecord,
    fork_arguments,
    fork_command,
    fork_dir,
    generate_arguments,
    paired_table,
    read_fork_record,
    with_arguments,
    with_value,
    write_fork_record,
)
from oneply.training.lab.campaign_guards import (
    SAVED,
    check_data,
    check_unfinished,
    row_name,
)

LATEST = "latest.onnx"
LEDGER = "ledger.json"
PLOT = "campaign.png"
BUNDLED = REFERENCE_MODEL  # the bundled weights in fp32 (the int8 file cannot warm-start)
#: the listwise ranking loss beside HL-Gauss: it won every measure of the 500k-position table
#: (docs/studies/table-500k.md), so the campaign trains with it
RANK_WEIGHT = 1.0


#: how much the trainers yield to a single labelling worker (nice, and Linux's autogroup nice):
#: at depth 6 the labels bind. At equal priority each session's process group gets an equal
#: share of the CPU, so two trainers beside one generate group starve Stockfish; niced, the
#: labeller gets most of a core and the trainers keep the other (docs/studies/2026-11-29.md).
TRAIN_NICE = 10
#: ... and how much two labelling workers (a fork with labels of its own) yield to the
#: trainers: at equal priority they would take both cores and run far ahead of what a
#: trainer reads
GENERATE_NICE = 2


def launch_niceness(name: str, labellers: int) -> int:
    """The priority `start` gives its process `name`: one labelling worker first, the
    trainers on what it leaves; two labellers after the trainers."""
    if name.endswith("generate"):
        return GENERATE_NICE if labellers > 1 else 0
    return TRAIN_NICE if labellers <= 1 else 0


def _yield_cpu(niceness: int) -> None:
    """In the launched child: lower its priority by `niceness`. With autogroup scheduling
    (Linux's default for desktop kernels) plain nice only ranks processes inside a session's
    group; the group's own nice, in /proc/self/autogroup, ranks it against the other groups."""
    os.nice(niceness)
    autogroup = Path("/proc/self/autogroup")
    if autogroup.exists():
        try:
            autogroup.write_text(str(niceness))
        except OSError:  # a kernel without the knob, or one that refuses it: nice still applies
            pass


def _launch(command: list[str], log: Path, niceness: int = 0) -> int:
    """A background process that outlives this command (its own session), output in `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        process = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=(lambda: _yield_cpu(niceness)) if niceness else None,
        )
    return process.pid


def latest_weights(config: CampaignConfig) -> Path:
    """What a session warm-starts from: this machine's last saved weights (`--weights`), else
    the campaign's published candidate (in the ledger's folder), else the bundled model."""
    for folder in (Path(config.weights), Path(config.ledger)):
        if (folder / LATEST).is_file():
            return folder / LATEST
    return BUNDLED


def start_commands(config: CampaignConfig) -> dict[str, list[str]]:
    """The generate and fit command lines of a session (what `start` launches)."""
    oneply = [sys.executable, "-m", "oneply.engine"]
    init = latest_weights(config)
    if config.init is not None:  # a new lineage (e.g. from a newly bundled model)
        init = Path(config.init)
    seed = config.seed if config.seed is not None else int(datetime.date.today().strftime("%Y%m%d"))
    generate = oneply + ["train", "generate", "--out", config.data, "--count", str(config.count)]
    generate += ["--depth", str(config.depth), "--workers", "1", "--seed", str(seed)]
    generate += ["--bench-sample", "0"]
    fresh = [] if config.no_generate and not Path(config.data).is_dir() else [config.data]
    fit = oneply + ["train", "fit", *fresh, *config.stock, "--follow", "--out", config.out]
    if config.facts:  # read more facts than the source: the new rows start at zero, lineage goes on
        fit += ["--facts", *config.facts]
    fit += ["--init", str(init), "--steps", str(config.steps), "--batch", str(config.batch)]
    fit += ["--lr", str(config.lr), "--warmup", "100", "--threads", "1", "--eval-every", "500"]
    fit += ["--checkpoint-every", "200", "--quiet", "--compile"]  # ~15% less CPU per step
    fit += ["--rank-weight", str(RANK_WEIGHT), "--max-passes", str(config.max_passes)]
    if config.hours:  # anneal when the session ends, whatever this machine's pace
        fit += ["--hours", str(config.hours)]
    commands = {"generate": generate, "fit": fit}
    own_generate = fork_generate_arguments(config)
    if own_generate:  # the fork's labels are the change: the same seed, other generate settings
        own = str(fork_dir(config.data))
        commands["fork-generate"] = with_arguments(with_value(generate, "--out", own), own_generate)
        extra = fork_arguments(config.fork or "", own_data=True)
        commands["fork"] = fork_command(fit, config.out, extra, data=(config.data, own))
    elif config.fork is not None:  # the same trainer, one change apart, on the same fresh data
        commands["fork"] = fork_command(fit, config.out, fork_arguments(config.fork))
    return commands


def fork_generate_arguments(config: CampaignConfig) -> list[str]:
    """What the fork's own generate changes (`--fork-depth D`, `--fork-generate "ARGS"`);
    empty where the fork reads the campaign's labels."""
    extra = [] if config.fork_depth is None else ["--depth", str(config.fork_depth)]
    if config.fork_generate is not None:
        extra += generate_arguments(config.fork_generate)
    return extra


def start(config: CampaignConfig) -> int:
    out = Path(config.out)
    commands = start_commands(config)
    check_unfinished(out, config.session)
    if "fork" in commands:
        check_unfinished(fork_dir(out), config.session)
    for name, command in commands.items():
        if name.endswith("generate") and not config.no_generate:
            check_data(command)
    if (out / "checkpoint.pt").exists():
        print(f"{out}/checkpoint.pt exists: the fit resumes it (its weights win over --init)")
    if "fork" in commands:  # its extra arguments: what follows the campaign's own command
        extra = commands["fork"][len(commands["fit"]) :]
        own_generate = fork_generate_arguments(config)
        own = str(fork_dir(config.data)) if own_generate else None
        write_fork_record(config.out, ForkRecord(extra, own, config.fork_depth, own_generate))
    pids = {}
    labellers = sum(name.endswith("generate") for name in commands)
    for name, command in commands.items():
        if name.endswith("generate") and config.no_generate:
            continue
        niceness = launch_niceness(name, labellers)
        pids[name] = _launch(command, out.parent / f"{out.name}-{name}.log", niceness)
        print(f"{name}: pid {pids[name]}, log {out.parent / f'{out.name}-{name}.log'}")
        print("  " + " ".join(command[2:]))
    print(f"at the end of the session: oneply train campaign save --out {out}")
    return 0


# --------------------------------------------------------------------------- save


def label_totals(data: Path) -> dict[str, Any]:
    """Positions labelled under a data directory, and their CPU-seconds where shards say.

    Every shard the trainer reads counts, nested ones too (`find_shards`): labels made
    elsewhere, on a lent device say, and copied into a subfolder for `fit --follow` to find
    are part of the session's labelling cost."""
    positions, seconds, timed = 0, 0.0, 0
    depths = set()
    for shard in find_shards(data) if data.exists() else []:
        meta = json.loads((shard / "meta.json").read_text())
        positions += int(meta.get("count", 0))
        if "worker_seconds" in meta:
            seconds += float(meta["worker_seconds"])
            timed += int(meta.get("count", 0))
        depths.add(meta.get("settings", {}).get("game", {}).get("depth"))
    return {"positions": positions, "seconds": seconds, "timed_positions": timed, "depths": depths}


def session_row(config: CampaignConfig, run: Path, data: str) -> dict[str, Any]:
    """This session's ledger row, read from its run and the data directory it trained on."""
    import torch

    checkpoint_path = run / "checkpoint.pt"
    if not checkpoint_path.is_file():
        raise CommandError(f"no {checkpoint_path}: start the campaign first (campaign start)")
    checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
    summary, metrics = checkpoint.get("summary", {}), checkpoint.get("metrics", {})
    labels = label_totals(Path(data))
    label_seconds = labels["seconds"]
    if config.label_seconds is not None:  # shards written before generate timed them
        label_seconds = config.label_seconds
    elif labels["timed_positions"] < labels["positions"]:
        raise CommandError(
            f"{labels['positions'] - labels['timed_positions']} positions in {data} have "
            "no worker_seconds (written by an older generate): pass --label-seconds"
        )
    return {
        "init": shipped_path(summary.get("init")),
        "steps": checkpoint["step"],
        "positions_seen": checkpoint["step"] * summary.get("batch", 0),
        "train_seconds": train_seconds(config, summary),
        "label_positions": labels["positions"],
        "label_depth": sorted(d for d in labels["depths"] if d is not None),
        "label_seconds": round(label_seconds, 1),
        "val_loss": metrics.get("val_loss"),
        "val_accuracy": metrics.get("val_accuracy"),
        "puzzle_check": metrics.get("puzzle_accuracy"),
    }


def train_seconds(config: CampaignConfig, summary: dict[str, Any]) -> float:
    """What the session's training cost: --train-seconds if given, else the trainer's
    process-tree CPU (what fit records), else its wall-clock step time (older checkpoints,
    which overstates the cost on a shared machine)."""
    if config.train_seconds is not None:
        return float(config.train_seconds)
    if summary.get("train_cpu_seconds") is not None:
        return float(summary["train_cpu_seconds"])
    return float(summary.get("train_seconds", 0.0))


def shipped_path(value: Any) -> Any:
    """`value` with a path inside the repository made repo-relative (anything else unchanged).

    Why: the ledger and published weights are committed and shipped; they must not name the
    machine a session ran on (tests/engine/test_readme.py checks)."""
    if not isinstance(value, str) or not Path(value).is_absolute():
        return value
    try:
        return str(Path(value).resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return Path(value).name


def update_ledger(ledger: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger with `row` replacing the same session's earlier row in its place (the
    curve's hours accumulate in ledger order), else appended."""
    if any(r.get("session") == row["session"] for r in ledger):
        return [row if r.get("session") == row["session"] else r for r in ledger]
    return [*ledger, row]


def export_run(run: Path, path: Path) -> None:
    """A run's EMA weights as a oneply ONNX file, its training summary in the metadata."""
    from oneply.training.model.export import export_model, load_checkpoint_model

    model, checkpoint = load_checkpoint_model(run / "checkpoint.pt")
    export_model(
        model,
        path,
        preset=checkpoint.get("preset", "small"),
        training={k: shipped_path(v) for k, v in checkpoint.get("summary", {}).items()},
    )


def save_fork(config: CampaignConfig) -> ForkRecord | None:
    """Where the campaign has a fork: the paired validation table, and the fork exported;
    returns the fork's record (None: no fork)."""
    record = read_fork_record(config.out)
    fork = fork_dir(config.out)
    if record is None or not (fork / "checkpoint.pt").is_file():
        if config.adopt_fork:
            raise CommandError(f"--adopt-fork: no fork run in {fork} (start --fork ...)")
        return None
    print(f"fork ({' '.join(record.change())}) beside the campaign, validation loss:")
    if record.data is not None:
        print("  (each on its own labels: the losses do not compare; oneply eval both on the")
        print(f"  same held-out positions, of {config.data} and of {record.data})")
    for line in paired_table(Path(config.out), fork):
        print("  " + line)
    export_run(fork, fork / FORK_MODEL)
    print(f"wrote {fork / FORK_MODEL}: judge both on the same held-out positions (oneply eval)")
    return record


def save(config: CampaignConfig) -> int:
    ledger_dir = Path(config.ledger)
    ledger_dir.mkdir(parents=True, exist_ok=True)
    record = save_fork(config)
    # the fork won its pairing: its weights, labels and row become the campaign's
    if config.adopt_fork and record is not None:
        row = session_row(config, fork_dir(config.out), record.data or config.data)
        row["fork"] = record.change()
        run = fork_dir(config.out)
    else:
        run = Path(config.out)
        row = session_row(config, run, config.data)
    path = ledger_dir / LEDGER
    ledger = json.loads(path.read_text()) if path.exists() else []
    row = {"session": row_name(config, ledger), **row}
    weights = Path(config.weights) / LATEST
    weights.parent.mkdir(parents=True, exist_ok=True)
    export_run(run, weights)
    if config.publish:  # a rated candidate the model card refers to: committed with the ledger
        shutil.copyfile(weights, ledger_dir / LATEST)
    names = [r.get("session") for r in ledger]  # the rows before this one (in place if saved)
    earlier = ledger[: names.index(row["session"])] if row["session"] in names else ledger
    row["lineage"] = config.lineage or (lineage(earlier[-1]) if earlier else FIRST_LINEAGE)
    ledger = update_ledger(ledger, row)
    path.write_text(json.dumps(ledger, indent=1) + "\n")
    marker = json.dumps({"session": row["session"], "step": row["steps"]}) + "\n"
    for saved in (
        Path(config.out),
        fork_dir(config.out),
    ):  # both are finished runs for a new session
        if (saved / "checkpoint.pt").is_file():
            (saved / SAVED).write_text(marker)
    plot(ledger, ledger_dir / PLOT)
    for point in cumulative(ledger):
        print(format_point(point))
    published = f", {ledger_dir / LATEST}" if config.publish else ""
    print(f"wrote {weights}{published}, {path}, {ledger_dir / PLOT}")
    return 0


def redraw(config: CampaignConfig) -> int:
    """The campaign's curve drawn again from the committed ledger (`plot`)."""
    path = Path(config.ledger) / LEDGER
    if not path.is_file():
        raise CommandError(f"no ledger at {path}", 2)
    ledger = json.loads(path.read_text())
    target = Path(config.plot) if config.plot else Path(config.ledger) / PLOT
    plot(ledger, target)
    print(f"wrote {target}")
    return 0


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, CampaignConfig)


def run(args: argparse.Namespace) -> int:
    config = from_args(CampaignConfig, args)
    if config.action == "rate":
        ledger = Path(config.ledger)
        return campaign_rating.rate(config, ledger / LEDGER, ledger / PLOT)
    if config.action == "plot":
        return redraw(config)
    return start(config) if config.action == "start" else save(config)

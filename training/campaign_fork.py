"""A paired fork of the campaign: a second trainer on the same fresh data, one change apart.

Why: the campaign adopts a change (a fact group, a loss weight) only when it beats the run
without it on the same positions, in the same order, from the same weights — the `threats`,
`gap` and `checks` measurements were all such forks. `campaign start --fork "FIT ARGS"` starts
that second trainer beside the campaign's (its command is the campaign's with FIT ARGS
appended: argparse lets a later flag win), writing to `<out>-fork`. `start --fork-depth D`
makes the labels the change: a second generate (same seed, depth D) writes `<data>-fork`, and
the fork reads that instead of `<data>` — at depth 2 the labelling outruns the trainer (about
3 ms of CPU a position against 8), so deeper labels may cost little wall-clock. `campaign save` then
prints the two runs' validation losses step by step and exports the fork next to its run, so
`oneply eval` can judge both on the same held-out positions; `save --adopt-fork` makes the
fork the campaign's latest weights and ledger row instead.
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError

#: the fork's own record, written at start: the extra `train fit` arguments it runs with
FORK_FILE = "fork.json"
#: where `save` exports the fork's EMA weights (beside its checkpoint, not committed)
FORK_MODEL = "model.onnx"


def fork_dir(out: str | Path) -> Path:
    """The fork's run directory beside the campaign's (`runs/campaign` → `runs/campaign-fork`)."""
    out = Path(out)
    return out.with_name(out.name + "-fork")


def fork_arguments(text: str, own_data: bool = False) -> list[str]:
    """The extra `train fit` arguments of `--fork`, checked against fit's own parser so a typo
    fails at start, not an hour later in a background log. None are needed where the fork
    reads its own labels (`own_data`: `--fork-depth`)."""
    from oneply.training import fit

    extra = shlex.split(text)
    if not extra and not own_data:
        raise CommandError('--fork needs train fit arguments, e.g. --fork "--gap-weight 4"')
    for flag in ("--out", "--init", "--follow", "--steps"):
        if flag in extra:
            raise CommandError(f"--fork: {flag} is the campaign's own; the fork keeps it")
    parser = argparse.ArgumentParser(prog="oneply train fit", add_help=False, exit_on_error=False)
    fit.add_arguments(parser)
    try:
        _, unknown = parser.parse_known_args(["data", *extra])
    except (argparse.ArgumentError, SystemExit) as error:
        raise CommandError(f"--fork {text!r}: {error}") from None
    if unknown:
        raise CommandError(f"--fork: train fit has no argument {' '.join(unknown)}")
    return extra


def with_value(command: list[str], flag: str, value: str) -> list[str]:
    """`command` with `flag`'s value replaced."""
    changed = list(command)
    changed[changed.index(flag) + 1] = value
    return changed


def fork_command(
    fit_command: list[str], out: str, extra: list[str], data: tuple[str, str] | None = None
) -> list[str]:
    """The campaign's fit command with the fork's directory and its extra arguments;
    `data` = (the campaign's data directory, the fork's own) swaps what the fork reads."""
    command = with_value(fit_command, "--out", str(fork_dir(out)))
    if data is not None:
        command[command.index(data[0])] = data[1]
    return command + extra


@dataclass(frozen=True)
class ForkRecord:
    """What `start` launched the fork with: its extra `train fit` arguments and, where it
    reads labels of its own (`--fork-depth`), their directory and depth."""

    args: list[str]
    data: str | None = None
    depth: int | None = None

    def change(self) -> list[str]:
        """The fork's difference from the campaign, as the ledger row names it."""
        labels = [] if self.depth is None else [f"labels at depth {self.depth} ({self.data})"]
        return [*self.args, *labels]


def write_fork_record(out: str, record: ForkRecord) -> None:
    directory = fork_dir(out)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / FORK_FILE).write_text(json.dumps(asdict(record)) + "\n")


def read_fork_record(out: str | Path) -> ForkRecord | None:
    """The fork's record, or None where this campaign has no fork."""
    path = fork_dir(out) / FORK_FILE
    if not path.is_file():
        return None
    fields = json.loads(path.read_text())
    return ForkRecord(fields["args"], fields.get("data"), fields.get("depth"))


def val_losses(run: Path) -> dict[int, float]:
    """Validation loss by step, from a run's metrics.jsonl (the last value of a step wins:
    a resumed run re-evaluates it)."""
    path = run / "metrics.jsonl"
    if not path.is_file():
        return {}
    losses = {}
    for line in path.read_text().splitlines():
        row: dict[str, Any] = json.loads(line) if line.strip() else {}
        if row.get("split") == "val" and "loss" in row:
            losses[int(row["step"])] = float(row["loss"])
    return losses


def paired_table(control: Path, fork: Path) -> list[str]:
    """A terminal table of the two runs' validation losses at the steps both evaluated."""
    ours, theirs = val_losses(control), val_losses(fork)
    steps = sorted(set(ours) & set(theirs))
    lines = [f"{'step':>6}  {'control':>8}  {'fork':>8}  {'fork - control':>14}"]
    for step in steps:
        delta = theirs[step] - ours[step]
        lines.append(f"{step:>6}  {ours[step]:>8.4f}  {theirs[step]:>8.4f}  {delta:>+14.4f}")
    if not steps:
        lines.append("(no step evaluated by both runs yet)")
    return lines

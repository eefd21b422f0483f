"""A paired fork of the campaign: a second trainer on the same fresh data, one change apart.

Why: the campaign adopts a change (a fact group, a loss weight) only when it beats the run
without it on the same positions, in the same order, from the same weights — the `threats`,
`gap` and `checks` measurements were all such forks. `campaign start --fork "FIT ARGS"` starts
that second trainer beside the campaign's (its command is the campaign's with FIT ARGS
appended: argparse lets a later flag win), writing to `<out>-fork`. `start --fork-depth D`
makes the labels the change: a second generate (same seed, depth D) writes `<data>-fork`, and
the fork reads that instead of `<data>` — at depth 2 the labelling outruns the trainer (about
3 ms of CPU a position against 8), so deeper labels may cost little wall-clock. `start
--fork-generate "GENERATE ARGS"` does the same with any of generate's settings (e.g. `--learner
MODEL.onnx`: the model plays one side of half the games, training/data/learner.py). `campaign save`
then prints the two runs' validation losses step by step and exports the fork next to its run, so
`oneply eval` can judge both on the same held-out positions; `save --adopt-fork` makes the
fork the campaign's latest weights and ledger row instead.
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import asdict, dataclass, field
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
    from oneply.training.fit import fit

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


def generate_arguments(text: str) -> list[str]:
    """The extra `train generate` arguments of `--fork-generate`, checked against generate's
    own parser at start (a learner file must exist). The output directory and the seed stay
    the campaign's: the fork's games are the campaign's games, one setting apart."""
    from oneply.training.data import generate

    extra = shlex.split(text)
    if not extra:
        raise CommandError('--fork-generate needs train generate arguments, e.g. "--depth 4"')
    for flag in ("--out", "--seed", "--workers"):
        if flag in extra:
            raise CommandError(f"--fork-generate: {flag} is the campaign's own; the fork keeps it")
    parser = argparse.ArgumentParser(
        prog="oneply train generate", add_help=False, exit_on_error=False
    )
    generate.add_arguments(parser)
    try:
        parsed, unknown = parser.parse_known_args(["--out", "-", "--count", "1", *extra])
    except (argparse.ArgumentError, SystemExit) as error:
        raise CommandError(f"--fork-generate {text!r}: {error}") from None
    if unknown:
        raise CommandError(f"--fork-generate: train generate has no argument {' '.join(unknown)}")
    if parsed.learner and not Path(parsed.learner).is_file():
        raise CommandError(f"--fork-generate: no learner model file {parsed.learner}")
    return extra


def with_arguments(command: list[str], extra: list[str]) -> list[str]:
    """`command` with each `--flag value` of `extra` set: a flag it already has gets the new
    value in place (the start guards read a flag's first value), a new one is appended."""
    changed, i = list(command), 0
    while i < len(extra):
        flag, rest = extra[i], extra[i + 1 :]
        value = rest[0] if rest and not rest[0].startswith("--") else None
        if value is not None and flag in changed:
            changed = with_value(changed, flag, value)
        else:
            changed += [flag] if value is None else [flag, value]
        i += 1 if value is None else 2
    return changed


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
    reads labels of its own (`--fork-depth`, `--fork-generate`), their directory, depth and
    the generate arguments that made them."""

    args: list[str]
    data: str | None = None
    depth: int | None = None
    generate: list[str] = field(default_factory=list)

    def change(self) -> list[str]:
        """The fork's difference from the campaign, as the ledger row names it."""
        if self.generate and self.generate != ["--depth", str(self.depth)]:
            labels = [f"labels of its own: generate {' '.join(self.generate)} ({self.data})"]
        elif self.depth is not None:
            labels = [f"labels at depth {self.depth} ({self.data})"]
        else:
            labels = []
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
    return ForkRecord(
        fields["args"], fields.get("data"), fields.get("depth"), fields.get("generate", [])
    )


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

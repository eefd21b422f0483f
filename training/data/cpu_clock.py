"""CPU seconds spent by a process and every process it started: the labelling cost meter.

Why: the campaign's curve and `ablate --cpu-hours` charge each position what its Stockfish
labels cost. Wall-clock time × workers is that cost only on an otherwise idle core; on the
project's shared two cores (a trainer beside the labeller) it overstated it by up to 1.7×. The
kernel knows the real figure: for every live process of the tree, its own user + system time
and that of the children it has already reaped (``/proc/PID/stat`` fields 14–17), so each
Stockfish that ran under a worker is counted exactly once, finished or not.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields after the command name (which may hold spaces) of /proc/PID/stat."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:  # the process ended since it was listed
        return None
    return text[text.rindex(")") + 2 :].split()


def _children(fields_by_pid: dict[int, list[str]]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, fields in fields_by_pid.items():
        children.setdefault(int(fields[1]), []).append(pid)  # field 4: the parent's pid
    return children


def tree_cpu_seconds(root: int | None = None) -> float | None:
    """User + system CPU seconds of `root` (default: this process), its live descendants and
    the children they reaped; None where there is no /proc (then callers fall back to wall
    time)."""
    if not (PROC / "self" / "stat").is_file():
        return None
    root = os.getpid() if root is None else root
    fields_by_pid = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(int(entry.name))) is not None:
            fields_by_pid[int(entry.name)] = fields
    if root not in fields_by_pid:
        return None
    children, ticks, pending = _children(fields_by_pid), 0, [root]
    while pending:
        pid = pending.pop()
        fields = fields_by_pid[pid]
        ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        pending.extend(children.get(pid, []))
    return ticks / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """The CPU seconds of a job that spans sittings: this process tree's since the meter was
    made, on top of what earlier sittings `carried` (read back from a checkpoint).

    Why: a trainer shares two cores with the labeller and often a second trainer, so its
    wall-clock step time overstates its cost (by 1.5x beside two other processes); the
    campaign's ledger charges CPU."""

    def __init__(self, carried: float = 0.0) -> None:
        self.carried = carried
        self.start = tree_cpu_seconds()

    def total(self) -> float | None:
        """Carried plus this sitting's CPU so far; None where there is no /proc."""
        now = tree_cpu_seconds()
        if now is None or self.start is None:
            return None
        return self.carried + now - self.start

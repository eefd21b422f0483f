"""What keeps the campaign's sessions apart: a saved run is not resumed, labelled data of
another seed is not reused, and a session's ledger row is not overwritten by another's.

Why: a session may find the last one's `runs/` and `data/` on the same machine: `start`
would have resumed a finished run and `generate` refused the directory only in
a background log, and `save` (its row named by the date) replaced that morning's row. Each
check here says, at once, which `mv` or `--session` gets past it.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from oneply.engine.errors import CommandError
from oneply.training.lab.campaign_config import CampaignConfig

#: written by `save` into each run it saved: {"session": ledger row, "step": ...}
SAVED = "saved.json"


def saved_as(run: Path) -> str | None:
    """The ledger row `save` last wrote for this run directory (None: never saved)."""
    marker = run / SAVED
    return json.loads(marker.read_text()).get("session") if marker.is_file() else None


def check_unfinished(run: Path, session: str | None) -> None:
    """Refuse to resume a run that an earlier session already saved as its ledger row,
    unless `--session` names that row (a session continuing its own run after a save).

    Why: on a machine that kept `runs/`, `start` would otherwise resume last session's
    finished run (its weights win over --init) and save it as a second row."""
    row = saved_as(run)
    if (run / "checkpoint.pt").exists() and row is not None and row != session:
        raise CommandError(
            f"{run} is the run saved as ledger row {row}: move it aside (mv {run} {run}-{row}) "
            f"to start this session's run from the campaign's latest weights (or, to go on "
            f"training it as row {row}, pass --session {row})"
        )


def row_name(config: CampaignConfig, ledger: list[dict[str, Any]]) -> str:
    """The ledger row this save writes: --session, else the row this run was saved as, else
    today's date with the first free suffix (YYYY-MM-DD, then YYYY-MM-DDb, ...).

    Why: two sessions on one day must not share a row: a save replaces its session's row,
    and the first session's row (its hours on the curve) would be lost."""
    taken = {str(row.get("session")) for row in ledger}
    own = saved_as(Path(config.out))
    if config.session is not None:
        if config.session in taken and config.session != own:
            raise CommandError(
                f"ledger row {config.session} belongs to another run: pass another --session "
                "(or none: today's date with the first free suffix)"
            )
        return str(config.session)
    if own is not None:
        return own
    today = datetime.date.today().isoformat()
    name = today
    for suffix in "bcdefghijklmnopqrstuvwxyz":
        if name not in taken:
            break
        name = today + suffix
    return name


def check_data(command: list[str]) -> None:
    """Refuse, at start, a generate directory written with another seed or depth (generate
    would refuse too, but in a background log an hour later)."""
    data = Path(command[command.index("--out") + 1])
    manifest = data / "manifest.json"
    if not manifest.is_file():
        return
    game = json.loads(manifest.read_text()).get("settings", {}).get("game", {})
    wanted = {key: int(command[command.index(f"--{key}") + 1]) for key in ("seed", "depth")}
    had = {key: game.get(key) for key in wanted}
    if had != wanted:
        raise CommandError(
            f"{data} holds positions of {had}, not {wanted}: labelled data the model has seen "
            f"is no longer fresh; move it aside (mv {data} {data}-{had['seed']}) or pass "
            "--data DIR"
        )

"""`oneply train campaign rate --suite RUN.json ...`: a ledger row's games in the strength suite.

Why: `save` records what a session's model measured when the session ended — validation
loss and a 200-puzzle check — and neither is what a user plays. The puzzles can stay flat
while the games move (docs/studies/README.md), so a curve of strength against CPU-hours
needs the games. They are played after `save` (`oneply strength MODEL --json RUN.json`, often
beside the bundled model, one or more runs of other seeds), so `rate` adds them to the row
afterwards: the wins, draws and losses against each opponent of every run summed and the
anchored rating fitted on all, as `oneply strength --merge` adds runs up. The row's model may
be a run's model or its baseline (`--as-baseline`): the bundled model's games against every
campaign model it was compared with count for its own row.

Only comparable games: searchless runs (the curve is the network's) at one time control over
the whole ledger (the anchors of `random`, `greedy` and skill 0 were measured at the suite's
default clock), and no run twice in a row (its games would count twice).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oneply.arena.strength_merge import add_up, read_run, suite_result
from oneply.arena.suite_result import SuiteResult
from oneply.engine.errors import CommandError
from oneply.training.lab.campaign_config import CampaignConfig
from oneply.training.lab.campaign_curve import cumulative, format_point, plot

COMMAND = "oneply train campaign rate"


def side_of(data: dict[str, Any], as_baseline: bool, path: Path) -> dict[str, Any]:
    """The part of a run's JSON that holds the row's model: the run itself or its baseline."""
    if not as_baseline:
        return data
    baseline = data.get("baseline")
    if not isinstance(baseline, dict):
        raise CommandError(
            f"{COMMAND}: {path} has no baseline; drop --as-baseline to count its model's games",
            2,
        )
    return baseline


def portable(model: str) -> str:
    """The model's path as the committed ledger may keep it: relative to the working directory
    when it lies inside it, else its file name (a path of this machine means nothing on the next
    one, and the shipped files hold no machine paths)."""
    path = Path(model)
    if not path.is_absolute():
        return model
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return path.name


def run_record(path: Path, data: dict[str, Any], games: SuiteResult, side: str) -> dict[str, Any]:
    """What the row keeps of one run: where it came from and what it rated alone."""
    return {
        "file": path.name,
        "seed": data["settings"].get("seed"),
        "side": side,
        "model": portable(games.model),
        "rating": games.rating.rating if games.rating else None,
        "pm": games.rating.pm if games.rating else None,
    }


def check_run(path: Path, data: dict[str, Any], time_control: str | None) -> None:
    """Refuse a run the curve cannot compare: look-ahead, another clock, a run counted already."""
    if int(data.get("search_nodes") or 0):
        raise CommandError(
            f"{COMMAND}: {path} played with look-ahead "
            f"({data['search_nodes']} nodes); the campaign's curve is the searchless network's",
            2,
        )
    clock = data["settings"].get("time_control")
    if time_control is not None and clock != time_control:
        raise CommandError(
            f"{COMMAND}: {path} played at {clock}, the ledger's suite games at "
            f"{time_control}; ratings at other clocks are not on one scale",
            2,
        )


def ledger_clock(ledger: list[dict[str, Any]]) -> str | None:
    """The time control of the suite games recorded so far (None before the first)."""
    for row in ledger:
        suite = row.get("suite")
        if isinstance(suite, dict) and suite.get("time_control"):
            return str(suite["time_control"])
    return None


def recorded(suite: dict[str, Any] | None) -> SuiteResult | None:
    """The games a row holds already, as one model's suite result."""
    if not suite:
        return None
    return suite_result({"model": "ledger", "opponents": suite["opponents"]})


def rated(
    row: dict[str, Any], paths: list[Path], as_baseline: bool, clock: str | None
) -> dict[str, Any]:
    """The row's suite record with the runs in `paths` added."""
    suite = row.get("suite") or {}
    runs = list(suite.get("runs", []))
    results = [r for r in [recorded(suite)] if r is not None]
    side = "baseline" if as_baseline else "model"
    for path in paths:
        data = read_run(path, COMMAND)
        check_run(path, data, clock)
        clock = clock or data["settings"].get("time_control")
        games = suite_result(side_of(data, as_baseline, path))
        record = run_record(path, data, games, side)
        key = (record["seed"], side, record["model"])
        if any((r.get("seed"), r.get("side"), r.get("model")) == key for r in runs):
            raise CommandError(
                f"{COMMAND}: row {row['session']} counts {path}'s games already "
                f"(seed {record['seed']}, {side} {record['model']})",
                2,
            )
        runs.append(record)
        results.append(games)
    total = add_up(results)
    if total.rating is None:
        raise CommandError(f"{COMMAND}: {paths[0]} holds no games", 2)
    return {
        "time_control": clock,
        "runs": runs,
        "opponents": [
            {
                "name": o.name,
                "anchor": o.anchor,
                "wins": o.wins,
                "draws": o.draws,
                "losses": o.losses,
            }
            for o in total.opponents
        ],
        "games": total.rating.games,
        "rating": total.rating.rating,
        "pm": total.rating.pm,
    }


def rate(config: CampaignConfig, ledger_path: Path, plot_path: Path) -> int:
    """Add the suite runs to one ledger row (default: the last), then redraw the curve."""
    if not config.suite:
        raise CommandError(f"{COMMAND}: name the runs: --suite RUN.json ...", 2)
    if not ledger_path.is_file():
        raise CommandError(f"{COMMAND}: no ledger at {ledger_path}", 2)
    ledger = json.loads(ledger_path.read_text())
    names = [row.get("session") for row in ledger]
    session = config.session or names[-1]
    if session not in names:
        raise CommandError(
            f"{COMMAND}: no row {session!r} in {ledger_path} (rows: "
            f"{', '.join(str(n) for n in names)})",
            2,
        )
    index = names.index(session)
    row = ledger[index]
    clock = ledger_clock(ledger)
    ledger[index] = {
        **row,
        "suite": rated(row, [Path(p) for p in config.suite], config.as_baseline, clock),
    }
    ledger_path.write_text(json.dumps(ledger, indent=1) + "\n")
    plot(ledger, plot_path)
    for point in cumulative(ledger):
        print(format_point(point))
    print(f"wrote {ledger_path}, {plot_path}")
    return 0

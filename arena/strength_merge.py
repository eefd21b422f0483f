"""`oneply strength --merge RUN.json ...`: several suite runs of the same models as one.

Why: one run (300 games against skill 0, 40 per UCI_Elo level) rates a model to about ±40 Elo,
so two models 30 Elo apart need about four runs before their difference clears its interval —
more than one session can play. Each run's `--json` keeps its games per opponent, so runs
played on different days (other seeds) add up: the wins, draws and losses against each
opponent are summed and the rating is fitted again on all of them, exactly as if one run had
played every game. Averaging the runs' ratings instead would weigh a run by nothing and lose
the games' own uncertainty.

Only like with like: the same model and baseline files (by the names the runs record), the
same look-ahead budget and time control, other seeds (a run merged twice would count its games
twice). Puzzle results are kept where the runs agree on them (the dev puzzles are
deterministic for a model) and dropped otherwise. The runs' head-to-head games against the
baseline (`--games-head`, arena/head_to_head.py) add up the same way: games and pairs summed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oneply.arena import head_to_head
from oneply.arena.head_to_head import HeadToHead
from oneply.arena.material import Giveaways
from oneply.arena.strength_report import comparison
from oneply.arena.suite_result import OpponentResult, SuiteResult, combined_rating
from oneply.engine.errors import CommandError

#: what every run's JSON must hold to be merged (what `oneply strength --json` writes)
REQUIRED = ("model", "opponents", "settings")
#: settings that must agree across the runs (the seed must differ instead)
SAME_SETTINGS = ("time_control", "levels")


def read_run(path: Path, command: str = "oneply strength --merge") -> dict[str, Any]:
    """One run's JSON, checked to be a `oneply strength --json` file.

    `command` heads the error message: the user sees the command they typed.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise CommandError(f"{command}: cannot read {path}: {error}", 2) from None
    if not isinstance(data, dict) or any(key not in data for key in REQUIRED):
        raise CommandError(
            f"{command}: {path} is not a results file of `oneply strength --json`", 2
        )
    return data


def suite_result(data: dict[str, Any]) -> SuiteResult:
    """A model's result as a run's JSON records it (its rating refitted from the games)."""
    opponents = [
        OpponentResult(
            name=o["name"],
            anchor=float(o["anchor"]),
            wins=int(o["wins"]),
            draws=int(o["draws"]),
            losses=int(o["losses"]),
            seconds=float(o.get("seconds") or 0.0),
            gives=_giveaways(o, "model"),
            opponent_gives=_giveaways(o, "opponent"),
        )
        for o in data["opponents"]
    ]
    return SuiteResult(
        model=data["model"],
        search_nodes=int(data.get("search_nodes") or 0),
        capped=bool(data.get("games_capped")),
        opponents=opponents,
        puzzles=data.get("puzzles") or {},
        rating=combined_rating(opponents),
        seconds=float(data.get("seconds") or 0.0),
        interrupted=bool(data.get("interrupted")),
    )


def _giveaways(opponent: dict[str, Any], side: str) -> Giveaways:
    gives, moves = opponent.get("gives_material", {}).get(side, [0, 0])
    return Giveaways(moves=int(moves), gives=int(gives))


def add_up(results: list[SuiteResult]) -> SuiteResult:
    """One model's runs as one: games per opponent summed, the rating fitted on all."""
    first = results[0]
    merged: dict[str, OpponentResult] = {}
    for result in results:
        for o in result.opponents:
            total = merged.setdefault(o.name, OpponentResult(o.name, o.anchor))
            if total.anchor != o.anchor:
                raise CommandError(
                    f"oneply strength --merge: {o.name} is anchored at {total.anchor:g} in one "
                    f"run and {o.anchor:g} in another; merge runs of one anchor table",
                    2,
                )
            total.wins, total.draws, total.losses = (
                total.wins + o.wins,
                total.draws + o.draws,
                total.losses + o.losses,
            )
            total.seconds += o.seconds
            total.gives.add(o.gives)
            total.opponent_gives.add(o.opponent_gives)
    opponents = list(merged.values())
    agree = all(r.puzzles == first.puzzles for r in results)
    return SuiteResult(
        model=first.model,
        search_nodes=first.search_nodes,
        capped=first.capped,
        opponents=opponents,
        puzzles=first.puzzles if agree else {},
        rating=combined_rating(opponents),
        seconds=sum(r.seconds for r in results),
        interrupted=any(r.interrupted for r in results),
    )


def check_alike(paths: list[Path], runs: list[dict[str, Any]]) -> None:
    """Refuse runs that are not the same measurement: other models, baseline, look-ahead or
    settings, or one seed twice."""
    first = runs[0]
    for path, run in zip(paths[1:], runs[1:], strict=True):
        for what, ours, theirs in (
            ("model", first["model"], run["model"]),
            ("baseline", _baseline(first), _baseline(run)),
            ("look-ahead", first.get("search_nodes"), run.get("search_nodes")),
            *((key, first["settings"].get(key), run["settings"].get(key)) for key in SAME_SETTINGS),
        ):
            if ours != theirs:
                raise CommandError(
                    f"oneply strength --merge: {path} has {what} {theirs}, {paths[0]} has "
                    f"{ours}; merge only runs of the same models and settings",
                    2,
                )
    seeds = [run["settings"].get("seed") for run in runs]
    for seed in {s for s in seeds if s is not None and seeds.count(s) > 1}:
        twice = [str(p) for p, s in zip(paths, seeds, strict=True) if s == seed]
        raise CommandError(
            f"oneply strength --merge: {', '.join(twice)} are runs of one seed ({seed}): their "
            "games would count twice",
            2,
        )


def _baseline(run: dict[str, Any]) -> str | None:
    baseline = run.get("baseline")
    return baseline.get("model") if isinstance(baseline, dict) else None


def merge(paths: list[Path]) -> tuple[list[SuiteResult], dict[str, Any]]:
    """The merged model (and baseline, where the runs have one) and the merged JSON."""
    runs = [read_run(path) for path in paths]
    check_alike(paths, runs)
    results = [add_up([suite_result(run) for run in runs])]
    if _baseline(runs[0]) is not None:
        results.append(add_up([suite_result(run["baseline"]) for run in runs]))
    data = results[0].to_dict()
    settings = dict(runs[0]["settings"])
    settings["seed"] = [run["settings"].get("seed") for run in runs]
    data["settings"] = settings
    data["merged"] = [str(path) for path in paths]
    if "caveat" in runs[0]:
        data["caveat"] = runs[0]["caveat"]
    if len(results) == 2:
        data["baseline"] = results[1].to_dict()
        data["comparison"] = comparison(results[0], results[1])
    heads = [HeadToHead.from_dict(run["head_to_head"]) for run in runs if run.get("head_to_head")]
    if heads:
        data["head_to_head"] = head_to_head.add_up(heads).to_dict()
        data["head_to_head"]["runs"] = len(heads)
    return results, data


def run(paths: list[str], json_out: str | None) -> int:
    """`oneply strength --merge`: the merged table and comparison, and its JSON."""
    from oneply.arena import match
    from oneply.arena import strength_report as report

    files = [Path(p) for p in paths]
    results, data = merge(files)
    seeds = ", ".join(str(s) for s in data["settings"]["seed"])
    title = f"oneply strength: {len(files)} runs merged (seeds {seeds}; "
    title += f"{data['settings'].get('time_control')})"
    print(report.table(results, title))
    if data.get("head_to_head"):
        print(head_to_head.text(HeadToHead.from_dict(data["head_to_head"])))
    if json_out:
        match.write_json(json_out, data)
        print(f"  wrote {json_out}")
    return 0

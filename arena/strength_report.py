"""What `oneply strength` shows: the terminal table, the JSON, the plot and the comparison of a
model with its baseline."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oneply.arena import elo
from oneply.arena.plots import pyplot

if TYPE_CHECKING:
    from oneply.arena.strength import StrengthConfig
    from oneply.arena.suite_result import SuiteResult


def rating_text(fit: elo.RatingFit | None) -> str:
    if fit is None:
        return "no games"
    text = f"{fit.rating:.0f} ± {fit.pm:.0f} (95% [{fit.lower:.0f}, {fit.upper:.0f}])"
    if fit.at_bound:
        text += " — every game lost or won: read as a bound"
    return text


def comparison(new: SuiteResult, old: SuiteResult) -> dict[str, Any] | None:
    """Rating difference new − old with a 95% interval (the two runs are independent, so the
    half-widths add in quadrature), and the puzzle accuracy differences."""
    if new.rating is None or old.rating is None:
        return None
    diff = new.rating.rating - old.rating.rating
    half = math.hypot(new.rating.pm, old.rating.pm)
    if diff - half > 0:
        verdict = "stronger"
    elif diff + half < 0:
        verdict = "weaker"
    else:
        verdict = "not distinguishable at 95%"
    out: dict[str, Any] = {
        "model": new.label,
        "baseline": old.label,
        "rating_diff": diff,
        "rating_diff_ci95": [diff - half, diff + half],
        "verdict": verdict,
    }
    for kind in ("argmax", "policy"):
        if kind in new.puzzles and kind in old.puzzles:
            out[f"puzzles_{kind}_diff"] = (
                new.puzzles[kind]["accuracy"] - old.puzzles[kind]["accuracy"]
            )
    return out


def table(results: list[SuiteResult], title: str) -> str:
    """Per model: puzzle bands (argmax / policy), each opponent's W/D/L, the rating."""
    lines = [title]
    for result in results:
        lines += ["", f"{result.label}  ({result.seconds:.0f}s)"]
        lines += puzzle_lines(result.puzzles)
        if result.opponents:
            head = f"  {'opponent':<14}{'anchor':>7}{'W/D/L':>12}{'score':>8}"
            lines.append(head + f"{'gives material (model/opp.)':>30}")
        for o in result.opponents:
            score = f"{o.points / o.games:.3f}" if o.games else "-"
            wdl = f"{o.wins}/{o.draws}/{o.losses}"
            gives = f"{percent(o.gives.rate)} / {percent(o.opponent_gives.rate)}"
            lines.append(f"  {o.name:<14}{o.anchor:>7.0f}{wdl:>12}{score:>8}{gives:>30}")
        lines.append(f"  rating: {rating_text(result.rating)}")
    for new, old in pairs(results):
        lines += ["", comparison_text(comparison(new, old))]
    return "\n".join(lines)


def percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def pairs(results: list[SuiteResult]) -> list[tuple[SuiteResult, SuiteResult]]:
    """What the report compares: the model with search against itself without, and the
    (searchless) model against a searchless baseline."""
    plain = [r for r in results if not r.search_nodes]
    searched = [r for r in results if r.search_nodes]
    out = [(s, plain[0]) for s in searched[:1]] if plain else []
    if len(plain) == 2:
        out.append((plain[0], plain[1]))
    return out


def puzzle_lines(puzzles: dict[str, Any]) -> list[str]:
    if not puzzles:
        return []
    argmax, policy = puzzles["argmax"], puzzles["policy"]
    lines = [f"  {'puzzles':<14}{'count':>7}{'argmax':>9}{'policy':>9}"]
    for band, row in argmax["bands"].items():
        full = policy["bands"][band]["accuracy"]
        lines.append(f"  {band:<14}{row['count']:>7}{row['accuracy']:>9.1%}{full:>9.1%}")
    lines.append(
        f"  {'all':<14}{argmax['count']:>7}{argmax['accuracy']:>9.1%}{policy['accuracy']:>9.1%}"
    )
    return lines


def comparison_text(diff: dict[str, Any] | None) -> str:
    if diff is None:
        return "comparison: no games to compare"
    lo, hi = diff["rating_diff_ci95"]
    text = (
        f"{diff['model']} vs baseline {diff['baseline']}: {diff['rating_diff']:+.0f} Elo "
        f"(95% [{lo:+.0f}, {hi:+.0f}]) → {diff['verdict']}"
    )
    if "puzzles_argmax_diff" in diff:
        text += (
            f"; puzzles argmax {100 * diff['puzzles_argmax_diff']:+.1f} points, "
            f"policy {100 * diff.get('puzzles_policy_diff', 0.0):+.1f} points"
        )
    return text


def to_json(results: list[SuiteResult], config: StrengthConfig, caveat: str) -> dict[str, Any]:
    """The first model's result at the top level; the baseline and the comparison beside it."""
    from oneply.arena.match import time_control

    data = results[0].to_dict()
    data["settings"] = {
        "time_control": time_control(config.runner).describe(),
        "games": {
            "random": config.games["random"],
            "greedy": config.games["greedy"],
            "sf-skill0": config.games["skill"],
            "per_level": config.games_per_level,
            "head": config.games_head,
        },
        "levels": config.levels,
        "puzzle_limit": config.puzzle_limit,
        "seed": config.runner.seed,
        "concurrency": config.runner.concurrency,
    }
    data["caveat"] = caveat
    plain = [r for r in results if not r.search_nodes]
    searched = [r for r in results if r.search_nodes]
    if searched:
        data["search"] = searched[0].to_dict()
        data["search_comparison"] = comparison(searched[0], results[0])
    if len(plain) == 2:
        data["baseline"] = plain[1].to_dict()
        data["comparison"] = comparison(plain[0], plain[1])
    return data


def plot(path: str, results: list[SuiteResult]) -> bool:
    """Left: score vs opponent anchor with the fitted curve; right: puzzle accuracy by band.
    False (and a message) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, (games_ax, puzzles_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    for number, result in enumerate(results):
        plot_games(games_ax, result, f"C{number}")
        plot_puzzles(puzzles_ax, result, number, len(results))
    games_ax.set_xlabel("opponent rating (anchor)")
    games_ax.set_ylabel("score of the model")
    games_ax.set_ylim(-0.02, 1.02)
    games_ax.axhline(0.5, color="grey", lw=0.5)
    games_ax.legend(loc="upper right", fontsize=7)
    games_ax.set_title("games")
    puzzles_ax.set_ylabel("puzzles solved")
    puzzles_ax.set_ylim(0, 1)
    puzzles_ax.set_title("dev puzzles by rating band")
    puzzles_ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_games(ax: Any, result: SuiteResult, colour: str) -> None:
    played = [o for o in result.opponents if o.games]
    if not played:
        return
    xs = [o.anchor for o in played]
    ys = [o.points / o.games for o in played]
    bounds = [elo.level_interval(o.points, o.games) for o in played]
    yerr = [
        [y - lo for y, (lo, _) in zip(ys, bounds, strict=True)],
        [hi - y for y, (_, hi) in zip(ys, bounds, strict=True)],
    ]
    name = Path(result.model).stem + ("+search" if result.search_nodes else "")
    ax.errorbar(xs, ys, yerr=yerr, fmt="o", capsize=3, color=colour, label=f"{name} score")
    for o in played:
        ax.annotate(
            o.name,
            (o.anchor, o.points / o.games),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    fit = result.rating
    if fit is None:
        return
    low, high = min(xs + [fit.lower]) - 200, max(xs + [fit.upper]) + 200
    grid = [low + (high - low) * i / 200 for i in range(201)]

    def curve(r: float) -> list[float]:
        return [elo.elo_to_score(r - g) for g in grid]

    if math.isfinite(fit.pm):
        ax.fill_between(grid, curve(fit.upper), curve(fit.lower), color=colour, alpha=0.15)
    ax.plot(
        grid, curve(fit.rating), color=colour, label=f"{name} fit {fit.rating:.0f} ± {fit.pm:.0f}"
    )


def plot_puzzles(ax: Any, result: SuiteResult, number: int, count: int) -> None:
    if not result.puzzles:
        return
    bands = list(result.puzzles["argmax"]["bands"])
    width = 0.8 / (2 * count)
    name = Path(result.model).stem + ("+search" if result.search_nodes else "")
    for k, kind in enumerate(("argmax", "policy")):
        values = [result.puzzles[kind]["bands"][b]["accuracy"] for b in bands]
        offset = (2 * number + k) * width - 0.4 + width / 2
        xs = [i + offset for i in range(len(bands))]
        ax.bar(
            xs,
            values,
            width,
            label=f"{name} {kind}",
            color=f"C{number}",
            alpha=0.5 if kind == "argmax" else 0.9,
        )
    ax.set_xticks(range(len(bands)), bands)

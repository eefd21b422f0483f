"""Strength against look-ahead budget: `oneply strength MODEL --nodes-curve 1,8,32,128,512`.

Each point is the whole suite with the look-ahead capped at N nodes per move, in the games
(option SearchNodes under the suite's clock, so a slow machine plays fewer nodes, never more)
and in the puzzles (N nodes per puzzle move). One node is one forward pass: the root's moves
scored once, as the searchless engine sees them, except that moves ending the game (mate,
stalemate, repetition) are valued exactly, so mates in one are never missed. The curve says
what each doubling of nodes buys, and so how much thinking time a bot operator should give
the search.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oneply.arena.plots import pyplot

if TYPE_CHECKING:  # the suite runs the points (strength.nodes_curve); this module shows them
    from oneply.arena.strength import SuiteResult


def _accuracy(result: SuiteResult, kind: str) -> float | None:
    report = result.puzzles.get(kind)
    return None if report is None else float(report["accuracy"])


def curve_json(model: str, points: list[SuiteResult]) -> dict[str, Any]:
    """What the PNG shows, as numbers: per budget, rating with its 95% interval, puzzles
    (`model` as the results file should name it)."""
    return {
        "model": model,
        "points": [
            {
                "nodes": p.search_nodes,
                "rating": p.rating.to_dict() if p.rating else None,
                "puzzles_argmax": _accuracy(p, "argmax"),
                "puzzles_policy": _accuracy(p, "policy"),
                "opponents": [o.to_dict() for o in p.opponents],
                "seconds": p.seconds,
            }
            for p in points
        ],
    }


def curve_table(points: list[SuiteResult]) -> str:
    """The curve in the terminal: one row per budget."""
    rows = ["nodes  rating (95%)        puzzles argmax  policy  games"]
    for p in points:
        rating = (
            f"{p.rating.rating:6.0f} [{p.rating.lower:.0f}, {p.rating.upper:.0f}]"
            if p.rating
            else "–"
        )
        argmax, policy = _accuracy(p, "argmax"), _accuracy(p, "policy")
        games = " ".join(f"{o.name} {o.wins}/{o.draws}/{o.losses}" for o in p.opponents)
        rows.append(
            f"{p.search_nodes:5d}  {rating:<19}  "
            f"{'–' if argmax is None else f'{argmax:.1%}':>14}  "
            f"{'–' if policy is None else f'{policy:.1%}':>6}  {games}"
        )
    return "\n".join(rows)


def plot_curve(path: str, model: str, points: list[SuiteResult]) -> bool:
    """Left: rating with its 95% interval against nodes (log scale); right: dev puzzles
    solved against nodes. False (and a message) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, (rating_ax, puzzles_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    rated = [p for p in points if p.rating is not None]
    if rated:
        x = [p.search_nodes for p in rated]
        y = [p.rating.rating for p in rated if p.rating]
        low = [p.rating.rating - p.rating.lower for p in rated if p.rating]
        high = [p.rating.upper - p.rating.rating for p in rated if p.rating]
        rating_ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3)
    rating_ax.set_xscale("log", base=2)
    rating_ax.set_xlabel("nodes per move")
    rating_ax.set_ylabel("rating (suite's anchored scale)")
    rating_ax.set_title("games")
    for kind in ("argmax", "policy"):
        solved = [(p.search_nodes, _accuracy(p, kind)) for p in points]
        shown = [(n, a) for n, a in solved if a is not None and not math.isnan(a)]
        if shown:
            puzzles_ax.plot(*zip(*shown, strict=True), marker="o", label=kind)
    puzzles_ax.set_xscale("log", base=2)
    puzzles_ax.set_ylim(0, 1)
    puzzles_ax.set_xlabel("nodes per move")
    puzzles_ax.set_ylabel("dev puzzles solved")
    puzzles_ax.set_title("puzzles")
    if puzzles_ax.get_legend_handles_labels()[0]:
        puzzles_ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{Path(model).name}: strength against look-ahead nodes")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True

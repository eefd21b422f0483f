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
    from oneply.arena.suite_result import SuiteResult


def _accuracy(result: SuiteResult, kind: str) -> float | None:
    report = result.puzzles.get(kind)
    return None if report is None else float(report["accuracy"])


def curve_point(p: SuiteResult) -> dict[str, Any]:
    """One budget's point as the JSON file keeps it: rating with its 95% interval, puzzles,
    the games against each opponent."""
    return {
        "nodes": p.search_nodes,
        "rating": p.rating.to_dict() if p.rating else None,
        "puzzles_argmax": _accuracy(p, "argmax"),
        "puzzles_policy": _accuracy(p, "policy"),
        "opponents": [o.to_dict() for o in p.opponents],
        "seconds": p.seconds,
    }


def merge_points(kept: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The curve grown by `new`: a budget measured again replaces its old point, the other
    budgets of the earlier file are kept, ordered by nodes.

    Why: a point costs minutes to hours (512 nodes a move over dozens of games), so a curve is
    extended one budget at a time rather than measured again whole."""
    budgets = {p["nodes"] for p in new}
    return sorted([p for p in kept if p["nodes"] not in budgets] + new, key=lambda p: p["nodes"])


def curve_json(model: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    """What the PNG shows, as numbers (`model` as the results file should name it)."""
    return {"model": model, "points": points}


def _rating(point: dict[str, Any]) -> str:
    r = point["rating"]
    return f"{r['rating']:6.0f} [{r['lower']:.0f}, {r['upper']:.0f}]" if r else "–"


def _percent(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.1%}"


def curve_table(points: list[dict[str, Any]]) -> str:
    """The curve in the terminal: one row per budget."""
    rows = ["nodes  rating (95%)        puzzles argmax  policy  games"]
    for p in points:
        games = " ".join(
            f"{o['name']} {o['wins']}/{o['draws']}/{o['losses']}" for o in p["opponents"]
        )
        rows.append(
            f"{p['nodes']:5d}  {_rating(p):<19}  {_percent(p['puzzles_argmax']):>14}  "
            f"{_percent(p['puzzles_policy']):>6}  {games}"
        )
    return "\n".join(rows)


def plot_curve(path: str, model: str, points: list[dict[str, Any]]) -> bool:
    """Left: rating with its 95% interval against nodes (log scale); right: dev puzzles
    solved against nodes. False (and a message) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, (rating_ax, puzzles_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    rated = [(p["nodes"], p["rating"]) for p in points if p["rating"] is not None]
    if rated:
        x = [n for n, _ in rated]
        y = [r["rating"] for _, r in rated]
        low = [r["rating"] - r["lower"] for _, r in rated]
        high = [r["upper"] - r["rating"] for _, r in rated]
        rating_ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3)
    rating_ax.set_xscale("log", base=2)
    rating_ax.set_xlabel("nodes per move")
    rating_ax.set_ylabel("rating (suite's anchored scale)")
    rating_ax.set_title("games")
    for kind in ("argmax", "policy"):
        solved = [(p["nodes"], p[f"puzzles_{kind}"]) for p in points]
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

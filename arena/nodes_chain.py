"""Elo against look-ahead nodes from a self-play chain: `oneply strength --nodes-chain-from`.

The suite's nodes curve (`--nodes-curve`, arena/search_curve.py) plays the whole anchored suite
once per budget: hours per point on two cores. The chain is cheaper and resolves more: node-
limited matches of each budget against the previous one (1 node against the searchless engine,
4 against 1, 16 against 4, ...), each `oneply match --json` file one link. Between neighbours the
games are close, so a pentanomial interval resolves them in tens of games, where an anchored
rating needs hundreds. A point's Elo is the sum of the links from the searchless engine, its
interval the links' half-widths in quadrature (each side on its own: a logistic interval is
not symmetric away from 0), and its rating that sum plus the searchless engine's suite rating
(`--anchor`; the anchor's own uncertainty is not added). Neighbouring points separate when their
link's interval excludes 0.

A link won or lost in every game has no finite Elo (the pentanomial spread is 0 and the score
clamps at elo.py's 2400). It is marked `saturated` and counts at its bound: the smallest Elo
under which all its games are won with 2.5% chance (Clopper-Pearson on the games), the other
side of its interval open. Every point above it is then a bound too, and the table says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oneply.arena import match
from oneply.arena.elo import SCORE_EPS, score_to_elo
from oneply.arena.plots import pyplot
from oneply.arena.suite_result import portable_path
from oneply.engine.errors import CommandError

#: the bundled model's suite rating (models/oneply-small.md's model-index), the default anchor
BUNDLED_RATING = 1269.0
#: an interval bound at elo.py's clamp of a 0% or 100% score means "no bound"
CLAMPED = score_to_elo(1.0 - SCORE_EPS) - 1e-3
#: the chance of all games won that bounds a saturated link (one side of a 95% interval)
TAIL = 0.025
COMMAND = "oneply strength --nodes-chain-from"


@dataclass(frozen=True)
class Link:
    """One match of the chain, the more searching engine first: its Elo over `base` nodes."""

    nodes: int
    base: int
    elo: float
    lower: float  # -inf: open below (a link lost in every game)
    upper: float  # inf: open above
    wdl: tuple[int, int, int]  # the larger budget's wins, draws, losses
    saturated: bool
    source: str

    @property
    def games(self) -> int:
        return sum(self.wdl)

    @property
    def separates(self) -> bool:
        """Its interval excludes 0: the two budgets differ at 95%."""
        return self.lower > 0 or self.upper < 0


@dataclass(frozen=True)
class Point:
    """One budget: Elo over the searchless engine and the anchored rating, 95% intervals."""

    nodes: int
    elo: float
    lower: float
    upper: float
    anchor: float
    bound: bool  # a saturated link lies below it: read the Elo as a bound

    @property
    def rating(self) -> tuple[float, float, float]:
        """The anchored rating with its interval: anchor + Elo."""
        return self.anchor + self.elo, self.anchor + self.lower, self.anchor + self.upper

    def to_dict(self) -> dict[str, Any]:
        rating, lower, upper = self.rating
        return {**asdict(self), "rating": rating, "rating_lower": lower, "rating_upper": upper}


def engine_nodes(engine: dict[str, Any], source: str) -> int:
    """An engine's budget: 0 when its option Search is off (the default), else its tc.nodes."""
    if str(engine.get("options", {}).get("Search", "false")).lower() != "true":
        return 0
    nodes = engine.get("tc", {}).get("nodes")
    if not nodes:
        raise CommandError(f"{COMMAND}: {source}: {engine.get('name')} searches without --nodes")
    return int(nodes)


def saturation_bound(games: int) -> float:
    """The Elo bound of a link that won all `games`: the score p with p**games == TAIL."""
    return score_to_elo(TAIL ** (1.0 / max(games, 1)))


def _finite(value: float | None, open_value: float) -> float:
    """A match JSON's bound: null (written for inf) or elo.py's clamp means open."""
    return open_value if value is None or abs(value) >= CLAMPED else float(value)


def read_link(path: Path) -> tuple[Link, str]:
    """One match file as a link (oriented so the larger budget comes first) and its model."""
    try:
        data = json.loads(path.read_text())
        a, b, results = data["engine_a"], data["engine_b"], data["results"]
        estimate = results["elo_pentanomial"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{COMMAND}: {path} is no `oneply match --json` file ({exc})") from None
    na, nb = engine_nodes(a, str(path)), engine_nodes(b, str(path))
    models = {str(e.get("options", {}).get("ModelFile", "")) for e in (a, b)}
    if na == nb or len(models) != 1:
        what = f"{na} against {nb} nodes" if na == nb else "two models"
        raise CommandError(f"{COMMAND}: {path} plays {what}: not a link of a nodes chain")
    games, score = int(results["games"]), float(results["score"])
    if games == 0:
        raise CommandError(f"{COMMAND}: {path} holds no games")
    elo = float(estimate["elo"]) + 0.0  # no -0
    lower, upper = _finite(estimate["lower"], -math.inf), _finite(estimate["upper"], math.inf)
    saturated = score <= 0.0 or score >= 1.0
    if saturated:  # all won: open above, bounded below; all lost: the mirror
        bound = saturation_bound(games)
        elo, lower, upper = (bound, bound, math.inf) if score >= 1 else (-bound, -math.inf, -bound)
    wdl = (int(results["wins"]), int(results["draws"]), int(results["losses"]))
    if na < nb:  # B searched more: the link reads from B's side
        na, nb, elo, lower, upper, wdl = nb, na, -elo, -upper, -lower, wdl[::-1]
    model = models.pop()
    link = Link(na, nb, elo, lower, upper, wdl, saturated, portable_path(path))
    return link, portable_path(model) if model else ""


def order_chain(links: list[Link]) -> list[Link]:
    """The links from the searchless engine up, each starting where the last one ended; a
    budget twice or a gap is an error naming the files, never a silently wrong curve."""
    ordered = sorted(links, key=lambda link: link.nodes)
    for one, other in zip(ordered, ordered[1:], strict=False):
        if one.nodes == other.nodes:
            raise CommandError(
                f"{COMMAND}: {one.source} and {other.source} both measure {one.nodes} nodes"
            )
    previous = 0
    for link in ordered:
        if link.base != previous:
            raise CommandError(
                f"{COMMAND}: broken chain: {link.source} plays {link.nodes} against "
                f"{link.base} nodes, but the link before it ends at {previous}"
                + (" (the searchless engine)" if previous == 0 else "")
            )
        previous = link.nodes
    return ordered


def chain_points(links: list[Link], anchor: float) -> list[Point]:
    """The searchless point (the anchor) and one point per link, Elo summed along the chain."""
    points = [Point(0, 0.0, 0.0, 0.0, anchor, False)]
    for k in range(1, len(links) + 1):
        below = links[:k]
        elo = sum(link.elo for link in below)
        lower = elo - math.hypot(*(link.elo - link.lower for link in below))
        upper = elo + math.hypot(*(link.upper - link.elo for link in below))
        bound = any(link.saturated for link in below)
        points.append(Point(below[-1].nodes, elo, lower, upper, anchor, bound))
    return points


def _elo(value: float, lower: float, upper: float) -> str:
    def side(x: float) -> str:
        return "∞" if x == math.inf else "-∞" if x == -math.inf else f"{x:+.0f}"

    return f"{value:+.0f} [{side(lower)}, {side(upper)}]"


def _rating(p: Point) -> str:
    text = _elo(*p.rating).replace("+", "")
    return text + (" bound" if p.bound else "")


#: the table's columns and their widths (a negative width aligns right)
COLUMNS = ("nodes", "vs", "games", "W/D/L", "link Elo (95%)", "separates", "from searchless (95%)")
WIDTHS = (-5, -4, -5, 11, 18, 9, 25, 0)


def _row(cells: list[str]) -> str:
    return "  ".join(
        f"{c:>{-w}}" if w < 0 else f"{c:<{w}}" for c, w in zip(cells, WIDTHS, strict=True)
    )


def table(model: str, anchor: float, links: list[Link], points: list[Point]) -> str:
    """The chain in the terminal: one row per budget, the link that reached it beside it."""
    rows = [
        f"nodes chain of {model or 'the bundled model'}, searchless anchored at {anchor:.0f}",
        _row([*COLUMNS, "rating (95%)"]),
        _row(["0", "–", "", "", "", "", "+0", f"{anchor:.0f}"]),
    ]
    for link, p in zip(links, points[1:], strict=True):
        verdict = "saturated" if link.saturated else "yes" if link.separates else "no"
        counts = [str(p.nodes), str(link.base), str(link.games), "/".join(map(str, link.wdl))]
        link_elo, elo = _elo(link.elo, link.lower, link.upper), _elo(p.elo, p.lower, p.upper)
        rows.append(_row([*counts, link_elo, verdict, elo, _rating(p)]))
    if any(link.saturated for link in links):
        rows.append(
            "  saturated: a link won (or lost) every game has no finite Elo; it counts at its "
            "95% bound, and the points above it are bounds"
        )
    rows.append("  intervals leave out the anchor's own uncertainty (±22 for the bundled model)")
    return "\n".join(rows)


def chain_json(model: str, anchor: float, links: list[Link], points: list[Point]) -> dict[str, Any]:
    """What the PNG shows, as numbers (open interval sides become null in the file)."""
    pairs = [{**asdict(link), "games": link.games, "separates": link.separates} for link in links]
    points_json = [p.to_dict() for p in points]
    return {"model": model or "bundled", "anchor": anchor, "pairs": pairs, "points": points_json}


def _yerr(values: list[float], lowers: list[float], uppers: list[float]) -> list[list[float]]:
    """Error bar lengths, an open side drawn as none (its marker says so)."""
    low = [v - lo if math.isfinite(lo) else 0.0 for v, lo in zip(values, lowers, strict=True)]
    high = [hi - v if math.isfinite(hi) else 0.0 for v, hi in zip(values, uppers, strict=True)]
    return [low, high]


def plot_chain(path: str, model: str, links: list[Link], points: list[Point]) -> bool:
    """Left: rating against nodes (log2) with 95% bars, the searchless engine as a line; right:
    each link's Elo with its interval. False (and a message) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    searched = points[1:]
    ys, lowers, uppers = (list(side) for side in zip(*(p.rating for p in searched), strict=True))
    yerr = _yerr(ys, lowers, uppers)
    budgets = [p.nodes for p in searched]
    left.errorbar(budgets, ys, yerr=yerr, marker="o", capsize=3)
    for p, y in zip(searched, ys, strict=True):
        if p.bound:
            left.annotate("bound", (p.nodes, y), fontsize=7)
    left.axhline(points[0].anchor, color="grey", ls="--", lw=1, label="searchless (0 nodes)")
    left.set_xscale("log", base=2)
    left.set_xticks(budgets, [str(n) for n in budgets])
    left.set(xlabel="nodes per move", ylabel="rating (suite's anchored scale)", title="chain")
    left.legend(loc="lower right", fontsize=8)
    xs = list(range(len(links)))
    elos = [link.elo for link in links]
    errs = _yerr(elos, [link.lower for link in links], [link.upper for link in links])
    colours = ["tab:green" if link.separates else "tab:grey" for link in links]
    for x, elo, lo, hi, colour, link in zip(xs, elos, *errs, colours, links, strict=True):
        marker = "^" if link.saturated else "o"
        right.errorbar([x], [elo], yerr=[[lo], [hi]], marker=marker, capsize=3, color=colour)
    right.axhline(0, color="grey", lw=1)
    right.set_xlim(-0.5, len(links) - 0.5)
    right.set_xticks(xs, [f"{link.nodes} v {link.base}" for link in links], fontsize=8)
    right.set(xlabel="link (nodes against nodes)", ylabel="Elo (95%)", title="each link")
    fig.suptitle(f"{Path(model).name or 'bundled model'}: Elo against look-ahead nodes")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(files: list[str], anchor: float, json_path: str | None, plot_path: str | None) -> int:
    """--nodes-chain-from: the chain of these match files, its table, JSON and plot."""
    read = [read_link(Path(name)) for name in files]
    models = {model for _, model in read}
    if len(models) > 1:
        raise CommandError(f"{COMMAND}: the matches play different models: {sorted(models)}")
    links = order_chain([link for link, _ in read])
    points, model = chain_points(links, anchor), models.pop()
    print(table(model, anchor, links, points))
    if json_path:
        match.write_json(json_path, chain_json(model, anchor, links, points))
        print(f"  wrote {json_path}")
    if plot_path and plot_chain(plot_path, model, links, points):
        print(f"  wrote {plot_path}")
    return 0

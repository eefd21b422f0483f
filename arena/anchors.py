"""Measure the anchor ratings of the strength suite's weak opponents (run rarely, by hand).

    python -m oneply.arena.anchors play DIR [--games N]   # the calibration matches → DIR/*.json
    python -m oneply.arena.anchors fit DIR/*.json          # one rating per engine

Stockfish's ``UCI_Elo`` levels are the only opponents with a known rating, and ``random`` and
``greedy`` are far below the weakest of them: they score 0% against it, and 0% or 100% says
nothing about a distance. So the calibration plays a chain of neighbours that score between
0% and 100% against each other, bridged by noisy engines (``greedy-noise50``: a random move
half of the time, see :mod:`oneply.arena.opponents`), and fits all engines at once:
maximum likelihood with every ``sf-eloN`` fixed at N, by coordinate ascent (each engine's
rating refitted with the others held, until nothing moves; the likelihood is concave, so this
converges to the joint optimum). Each engine's interval holds the others fixed, so along a
long chain it understates the uncertainty. The results become
the anchors of arena/registry.py's ``SUITE``; docs/strength.md records the run.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from oneply.arena import elo
from oneply.arena.registry import uci_elo

#: (engine A, engine B) pairs of the calibration, neighbours on the scale, weakest first
CALIBRATION: tuple[tuple[str, str], ...] = (
    ("greedy-noise95", "random"),
    ("greedy-noise80", "greedy-noise95"),
    ("greedy-noise80", "random"),
    ("greedy-noise65", "greedy-noise80"),
    ("greedy-noise50", "greedy-noise65"),
    ("greedy-noise50", "greedy-noise80"),
    ("greedy", "greedy-noise50"),
    ("greedy", "random"),
    ("sf-noise50", "greedy"),
    ("sf-noise25", "sf-noise50"),
    ("sf-noise25", "greedy"),
    ("sf-skill0-n1", "sf-noise25"),
    ("sf-skill0", "sf-skill0-n1"),
    ("sf-skill0", "sf-elo1350"),
    ("sf-skill0-n1", "sf-elo1350"),
)

#: the time control of the calibration: the strength suite's default
TC = "5+0.05"

#: one result: (engine A, engine B, A's points, games)
Result = tuple[str, str, float, float]


def fixed_rating(name: str) -> float | None:
    """Stockfish's UCI_Elo levels count at their nominal Elo."""
    return uci_elo(name)


def fit_pool(results: list[Result], rounds: int = 500) -> dict[str, elo.RatingFit]:
    """Joint ML ratings of every engine that is not a fixed anchor (see the module docstring)."""
    players = {name for a, b, _, _ in results for name in (a, b)}
    ratings = {p: fixed_rating(p) or 0.0 for p in players}
    free = sorted(p for p in players if fixed_rating(p) is None)
    if not free or all(fixed_rating(p) is None for p in players):
        raise ValueError("need at least one sf-eloN anchor and one engine to rate")
    fits: dict[str, elo.RatingFit] = {}
    for _ in range(rounds):
        moved = 0.0
        for player in free:
            fits[player] = fit_one(player, results, ratings)
            moved = max(moved, abs(fits[player].rating - ratings[player]))
            ratings[player] = fits[player].rating
        if moved < 0.01:
            break
    return fits


def fit_one(player: str, results: list[Result], ratings: dict[str, float]) -> elo.RatingFit:
    """One engine's rating with every opponent held at its current rating."""
    rows: defaultdict[str, list[float]] = defaultdict(
        lambda: [0.0, 0.0]
    )  # opponent → [points, games]
    for a, b, points, games in results:
        if player in (a, b) and a != b:
            other, mine = (b, points) if a == player else (a, games - points)
            rows[other][0] += mine
            rows[other][1] += games
    opponents = sorted(rows)
    return elo.fit_anchored(
        [ratings[o] for o in opponents],
        [rows[o][0] for o in opponents],
        [rows[o][1] for o in opponents],
    )


def read_match(path: Path) -> Result:
    """(A, B, A's points, games) from an `oneply match --json` file."""
    data = json.loads(path.read_text())
    r = data["results"]
    a, b = data["engine_a"]["name"], data["engine_b"]["name"]
    return a, b, r["wins"] + 0.5 * r["draws"], float(r["games"])


def play(directory: Path, games: int, seed: int) -> None:
    """The calibration matches through `oneply match` (one JSON per pair)."""
    from oneply.engine.cli import main as cli_main

    directory.mkdir(parents=True, exist_ok=True)
    for a, b in CALIBRATION:
        out = directory / f"{a}--{b}.json"
        if out.exists():  # resumable: a finished pair is not played again
            continue
        argv = ["match", a, b, "--games", str(games), "--tc", TC, "--seed", str(seed)]
        cli_main(argv + ["--quiet", "--json", str(out)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("play", help="play the calibration matches")
    p.add_argument("directory", type=Path)
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--seed", type=int, default=11)
    f = sub.add_parser("fit", help="fit ratings to `oneply match --json` files")
    f.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "play":
        play(args.directory, args.games, args.seed)
        return 0
    results = [read_match(path) for path in args.files]
    for a, b, points, games in results:
        print(f"{a:>16} vs {b:<16} {points:5.1f}/{games:.0f}")
    fits = fit_pool(results)
    for name, fit in sorted(fits.items(), key=lambda item: item[1].rating):
        bound = "  (all won or all lost)" if fit.at_bound else ""
        print(f"{name:<16} {fit.rating:7.0f} ± {fit.pm:4.0f}  over {fit.games:.0f} games{bound}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

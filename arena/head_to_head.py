"""`oneply strength NEW --baseline OLD --games-head N`: the two models against each other.

Why: the suite compares a model with its baseline through two ratings against the same anchors.
The two fits are independent, so their half-widths add in quadrature, and a difference of 20 –
30 Elo stays inside the interval after more than a thousand games a side against Stockfish.
A direct match asks the same
question with one interval, and each pair of games (one opening, colours swapped) cancels most
of what the opening gives one side: the pentanomial statistic by which fishtest and OpenBench
decide a patch. Both sides are the searchless engine at a few milliseconds a move, so its games
cost less than the suite's against Stockfish.

What it does not replace: the anchored rating says how strong a model is on a scale that other
runs share; a match between two close relatives says which of the two wins against the other,
and the two gaps need not agree: between two relatives the match has read about half the
anchored gap (docs/studies/2026-12-05.md). The report keeps both, and the ship decision reads
the anchored one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oneply.arena import elo
from oneply.arena.suite_result import portable_path
from oneply.engine.errors import CommandError


@dataclass
class HeadToHead:
    """The games of a model against its baseline, from the model's side."""

    model: str
    baseline: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    #: pentanomial counts: pairs where the model scored 0, ½, 1, 1½ or 2 points
    pairs: list[int] = field(default_factory=lambda: [0] * 5)
    seconds: float = 0.0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def estimate(self) -> elo.EloEstimate:
        """Pentanomial once a pair is complete (the games of a pair are not independent),
        trinomial before."""
        return elo.pentanomial(self.pairs) if sum(self.pairs) else elo.trinomial(*self.wdl())

    def wdl(self) -> tuple[int, int, int]:
        return self.wins, self.draws, self.losses

    def verdict(self) -> str:
        estimate = self.estimate()
        if estimate.lower > 0:
            return "stronger"
        if estimate.upper < 0:
            return "weaker"
        return "not distinguishable at 95%"

    def to_dict(self) -> dict[str, Any]:
        estimate = self.estimate() if self.games else None
        return {
            "model": portable_path(self.model),
            "baseline": portable_path(self.baseline),
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "pentanomial": list(self.pairs),
            "elo": estimate.to_dict() if estimate else None,
            "verdict": self.verdict() if self.games else None,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeadToHead:
        return cls(
            model=str(data["model"]),
            baseline=str(data["baseline"]),
            wins=int(data["wins"]),
            draws=int(data["draws"]),
            losses=int(data["losses"]),
            pairs=[int(n) for n in data["pentanomial"]],
            seconds=float(data.get("seconds") or 0.0),
        )


def from_stats(model: str, baseline: str, stats: dict[str, Any], seconds: float) -> HeadToHead:
    """A played match's scoreboard summary (arena/results.py) as the model's head-to-head."""
    return HeadToHead(
        model=model,
        baseline=baseline,
        wins=int(stats["wins"]),
        draws=int(stats["draws"]),
        losses=int(stats["losses"]),
        pairs=[int(n) for n in stats["pentanomial"]],
        seconds=seconds,
    )


def add_up(results: list[HeadToHead]) -> HeadToHead:
    """Runs of other seeds as one match: games and pairs summed (their openings differ, so the
    pairs are as independent as within one run)."""
    first = results[0]
    if any((r.model, r.baseline) != (first.model, first.baseline) for r in results):
        raise CommandError(
            "oneply strength --merge: the runs' head-to-head games are of other models; merge "
            "only runs of the same model and baseline",
            2,
        )
    return HeadToHead(
        model=first.model,
        baseline=first.baseline,
        wins=sum(r.wins for r in results),
        draws=sum(r.draws for r in results),
        losses=sum(r.losses for r in results),
        pairs=[sum(r.pairs[k] for r in results) for k in range(5)],
        seconds=sum(r.seconds for r in results),
    )


def text(result: HeadToHead) -> str:
    """One line for the terminal: W/D/L, the pairs, the Elo with its interval and the verdict."""
    if not result.games:
        return f"head-to-head {result.model} vs {result.baseline}: no games"
    e = result.estimate()
    return (
        f"head-to-head {result.model} vs {result.baseline}: {result.wins}/{result.draws}/"
        f"{result.losses} in {result.games} games, pairs {result.pairs}: {e.elo:+.0f} Elo "
        f"(95% [{e.lower:+.0f}, {e.upper:+.0f}]) → {result.verdict()}"
    )

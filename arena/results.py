"""What a match produced: per-game records, the running scoreboard (Elo, SPRT) and its JSON."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from oneply.arena import elo
from oneply.arena.settings import EngineSpec, MatchSettings


@dataclass
class GameRecord:
    """One finished game, from engine A's point of view where it matters."""

    index: int
    pair: int
    a_white: bool
    white: str
    black: str
    result: str
    termination: str
    reason: str
    plies: int
    seconds: float
    opening: dict[str, Any]
    pgn: str = ""

    @property
    def score_a(self) -> float | None:
        """A's points, or None for an unterminated game (not counted)."""
        points = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(self.result)
        if points is None:
            return None
        return points if self.a_white else 1.0 - points

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("pgn")
        out["score_a"] = self.score_a
        return out


class Scoreboard:
    """Running W/D/L, pentanomial pairs and SPRT state; updated as games finish (any order)."""

    def __init__(self, sprt: tuple[float, float, float, float] | None = None) -> None:
        self.scores: dict[int, float | None] = {}
        self.sprt = sprt
        self.bounds = elo.sprt_bounds(sprt[2], sprt[3]) if sprt else None

    def add(self, record: GameRecord) -> None:
        self.scores[record.index] = record.score_a

    def wdl(self) -> tuple[int, int, int]:
        values = [s for s in self.scores.values() if s is not None]
        return values.count(1.0), values.count(0.5), values.count(0.0)

    def pairs(self) -> list[int]:
        """Pentanomial counts over pairs where both games have a result."""
        counts = [0] * 5
        for first in range(0, max(self.scores, default=-1) + 1, 2):
            a, b = self.scores.get(first), self.scores.get(first + 1)
            if a is not None and b is not None:
                counts[elo.pair_points(a, b)] += 1
        return counts

    def estimate(self) -> elo.EloEstimate:
        """Pentanomial when there is at least one complete pair, else trinomial."""
        pairs = self.pairs()
        return elo.pentanomial(pairs) if sum(pairs) else elo.trinomial(*self.wdl())

    def llr(self) -> float | None:
        if not self.sprt:
            return None
        return elo.sprt_llr_pentanomial(self.pairs(), self.sprt[0], self.sprt[1])

    def sprt_decision(self) -> str | None:
        llr = self.llr()
        if llr is None or self.bounds is None:
            return None
        return elo.sprt_decision(llr, self.bounds, sum(self.pairs()))

    def summary(self) -> dict[str, Any]:
        wins, draws, losses = self.wdl()
        n = wins + draws + losses
        pairs = self.pairs()
        out: dict[str, Any] = {
            "games": n,
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "score": (wins + draws / 2) / n if n else None,
            "draw_ratio": elo.draw_ratio(wins, draws, losses),
            "los": elo.los_trinomial(wins, losses),
            "pentanomial": pairs,
            "elo_pentanomial": elo.pentanomial(pairs).to_dict() if sum(pairs) else None,
            "elo_trinomial": elo.trinomial(wins, draws, losses).to_dict(),
        }
        if self.sprt and self.bounds:
            out["sprt"] = {
                "elo0": self.sprt[0],
                "elo1": self.sprt[1],
                "alpha": self.sprt[2],
                "beta": self.sprt[3],
                "llr": self.llr(),
                "lower": self.bounds.lower,
                "upper": self.bounds.upper,
                "decision": self.sprt_decision(),
            }
        return out


@dataclass
class MatchResult:
    """What a match produced: games, statistics and the PIDs it spawned (for leak checks)."""

    settings: MatchSettings
    names: tuple[str, str]
    games: list[GameRecord]
    stats: dict[str, Any]
    seconds: float
    pids: list[int]
    stopped_by_sprt: str | None = None

    def to_json(self) -> dict[str, Any]:
        s = self.settings

        def engine(spec: EngineSpec, name: str) -> dict[str, Any]:
            return {
                "name": name,
                "command": list(spec.command),
                "options": dict(spec.options),
                "tc": asdict(spec.tc),
            }

        return {
            "engine_a": engine(s.engine_a, self.names[0]),
            "engine_b": engine(s.engine_b, self.names[1]),
            "settings": {
                "games": s.games,
                "concurrency": s.concurrency,
                "openings": len(s.openings),
                "timemargin": s.timemargin,
                "adjudicator": s.adjudicator,
                "resign_score": s.resign_score,
                "resign_moves": s.resign_moves,
                "syzygy": s.syzygy,
                "sprt": s.sprt,
            },
            "results": self.stats,
            "terminations": dict(Counter(g.reason for g in self.games)),
            "stopped_by_sprt": self.stopped_by_sprt,
            "seconds": self.seconds,
            "games_per_minute": 60.0 * len(self.games) / self.seconds if self.seconds else None,
            "games": [g.to_dict() for g in sorted(self.games, key=lambda g: g.index)],
        }

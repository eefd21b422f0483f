"""What one suite run measured, per model: the games against each opponent, the puzzles and
the rating fitted on them — the types that `oneply strength` fills, reports and merges
(arena/strength.py plays, arena/strength_report.py shows, arena/strength_merge.py adds runs up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oneply.arena import elo
from oneply.arena.material import Giveaways


@dataclass
class OpponentResult:
    """The games against one opponent, from the model's side."""

    name: str
    anchor: float
    wins: int = 0
    draws: int = 0
    losses: int = 0
    seconds: float = 0.0
    #: the model's moves that gave material away by static exchange, and the opponent's
    gives: Giveaways = field(default_factory=Giveaways)
    opponent_gives: Giveaways = field(default_factory=Giveaways)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def points(self) -> float:
        return self.wins + 0.5 * self.draws

    def to_dict(self) -> dict[str, Any]:
        lo, hi = elo.level_interval(self.points, self.games)
        return {
            "name": self.name,
            "anchor": self.anchor,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score": self.points / self.games if self.games else None,
            "score_ci95": [lo, hi],
            "seconds": self.seconds,
            "gives_material": {
                "model": self.gives.to_list(),
                "opponent": self.opponent_gives.to_list(),
            },
        }


def portable_path(path: str | Path) -> str:
    """`path` as a results file records it: relative to the oneply package (its own data) or
    to the working directory when it lies inside either, else as given. Results files are
    shipped and compared across machines; `/work/main/arena/data/…` means nothing elsewhere."""
    resolved = Path(path).resolve()
    for base in (Path(__file__).resolve().parent.parent, Path.cwd().resolve()):
        if resolved.is_relative_to(base):
            return str(resolved.relative_to(base))
    return str(path)


@dataclass
class SuiteResult:
    """Everything one model's suite run measured."""

    model: str
    #: 0: the searchless engine; N: with look-ahead (N nodes per puzzle move, the clock in games)
    search_nodes: int = 0
    #: the games capped at search_nodes per move too (a point of the nodes curve)
    capped: bool = False
    opponents: list[OpponentResult] = field(default_factory=list)
    puzzles: dict[str, Any] = field(default_factory=dict)
    rating: elo.RatingFit | None = None
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def label(self) -> str:
        return self.model + (f" + search ({self.search_nodes} nodes)" if self.search_nodes else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": portable_path(self.model),
            "search_nodes": self.search_nodes,
            "games_capped": self.capped,
            "rating": self.rating.to_dict() if self.rating else None,
            "opponents": [o.to_dict() for o in self.opponents],
            "puzzles": self.puzzles,
            "seconds": self.seconds,
            "interrupted": self.interrupted,
        }


def combined_rating(opponents: list[OpponentResult]) -> elo.RatingFit | None:
    """The ML rating over every opponent played (None before any game)."""
    played = [o for o in opponents if o.games]
    if not played:
        return None
    return elo.fit_anchored(
        [o.anchor for o in played], [o.points for o in played], [o.games for o in played]
    )

"""Elo statistics for engine matches: pure functions, no I/O.

Conventions (the same as cutechess-cli, fastchess and fishtest, so numbers can be compared):

* Scores are from engine A's point of view: win 1, draw 0.5, loss 0.
* Logistic Elo: ``elo = -400 * log10(1 / score - 1)``.
* Confidence intervals use the normal approximation on the mean score: ``mu ± z * sigma / sqrt(n)``,
  each bound converted to Elo (so the interval is asymmetric in Elo). The "±" we print is half its
  width, as fastchess does.
* Trinomial statistics treat each game as independent (W/D/L). Pentanomial statistics treat each
  *pair* of games played from the same opening with colours swapped as one sample with outcome
  0, 0.5, 1, 1.5 or 2 points; that removes the opening's bias from the variance, which is why paired
  openings give tighter (and honest) intervals.
* SPRT: the generalised SPRT log-likelihood ratio in its normal approximation, as fishtest
  computes it (``LLR ≈ N (s1 − s0)(2μ − s0 − s1) / (2σ²)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: two-sided 95% normal quantile
Z95 = 1.959963984540054
#: natural-units factor for normalised Elo (nElo), as fastchess/fishtest
NELO_SCALE = 800.0 / math.log(10.0)
#: smallest and largest score we convert to Elo (avoids infinities at 0% / 100%)
SCORE_EPS = 1e-6
#: fishtest's regularisation of empty outcome bins in the SPRT (keeps the variance positive)
SPRT_EPS = 1e-3
#: the SPRT decides nothing before this many game pairs: with few pairs the variance is
#: estimated from nearly empty bins, and a single pair (all its weight in one bin) would
#: otherwise cross either bound on its own
SPRT_MIN_PAIRS = 10


def score_to_elo(score: float) -> float:
    """Logistic Elo difference for an expected score; clamped so 0% and 100% stay finite."""
    score = min(max(score, SCORE_EPS), 1.0 - SCORE_EPS)
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_to_score(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger than the opponent."""
    return float(1.0 / (1.0 + 10.0 ** (-elo / 400.0)))


def _phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _mean_var(values: Sequence[float], counts: Sequence[float]) -> tuple[float, float, float]:
    """(n, mean, population variance) of a discrete distribution given by value counts."""
    n = float(sum(counts))
    if n <= 0:
        return 0.0, 0.5, 0.0
    mu = sum(v * c for v, c in zip(values, counts, strict=True)) / n
    var = sum(c * (v - mu) ** 2 for v, c in zip(values, counts, strict=True)) / n
    return n, mu, var


class Interval:
    """A measure with its 95% interval [lower, upper] (a dataclass's fields): the "±" printed
    next to it, and its record with that "±"."""

    lower: float
    upper: float

    @property
    def pm(self) -> float:
        """Half the interval's width: the "±" printed next to the measure."""
        return (self.upper - self.lower) / 2.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        out["pm"] = self.pm
        return out


@dataclass(frozen=True)
class EloEstimate(Interval):
    """An Elo difference with its 95% interval, as computed from one kind of statistic."""

    elo: float
    lower: float
    upper: float
    score: float
    #: samples used: games (trinomial) or pairs (pentanomial)
    n: float
    #: likelihood of superiority: P(true Elo > 0)
    los: float
    #: normalised Elo: score excess in units of its per-game standard deviation
    nelo: float


def _estimate(n: float, mu: float, var: float, games_per_sample: int) -> EloEstimate:
    """Interval, LOS and nElo from the mean and variance of per-sample normalised scores."""
    if n <= 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5, 0.0, 0.5, 0.0)
    se = math.sqrt(var / n)
    lower = score_to_elo(mu - Z95 * se)
    upper = score_to_elo(mu + Z95 * se)
    if se > 0:
        los = _phi((mu - 0.5) / se)
    else:
        los = 0.5 if mu == 0.5 else float(mu > 0.5)
    per_game_sd = math.sqrt(var * games_per_sample)
    nelo = (mu - 0.5) / per_game_sd * NELO_SCALE if per_game_sd > 0 else 0.0
    return EloEstimate(score_to_elo(mu), lower, upper, mu, n, los, nelo)


def trinomial(wins: int, draws: int, losses: int) -> EloEstimate:
    """Elo from independent games (use when openings are not paired)."""
    return _estimate(*_mean_var((1.0, 0.5, 0.0), (wins, draws, losses)), games_per_sample=1)


def pentanomial(pairs: Sequence[int]) -> EloEstimate:
    """Elo from game pairs; ``pairs[k]`` counts pairs where A scored k/2 points (k = 0..4)."""
    if len(pairs) != 5:
        raise ValueError("pentanomial counts need 5 entries: [0, 0.5, 1, 1.5, 2] points per pair")
    values = (0.0, 0.25, 0.5, 0.75, 1.0)
    return _estimate(*_mean_var(values, pairs), games_per_sample=2)


def draw_ratio(wins: int, draws: int, losses: int) -> float:
    """Fraction of games drawn (0 when no games)."""
    n = wins + draws + losses
    return draws / n if n else 0.0


def los_trinomial(wins: int, losses: int) -> float:
    """Classic likelihood of superiority: draws carry no information, wins vs losses do."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


def pair_points(score_a_first: float, score_a_second: float) -> int:
    """Index into the pentanomial counts for one pair: A's points in half-points (0..4)."""
    return round(2 * (score_a_first + score_a_second))


# --------------------------------------------------------------------------- SPRT


@dataclass(frozen=True)
class SprtBounds:
    """Wald's stopping bounds for the log-likelihood ratio."""

    lower: float
    upper: float


def sprt_bounds(alpha: float, beta: float) -> SprtBounds:
    """Accept H0 (elo0) below ``lower``, accept H1 (elo1) above ``upper``."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError("alpha and beta must lie in (0, 1)")
    return SprtBounds(math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha))


def _llr(values: Sequence[float], counts: Sequence[float], elo0: float, elo1: float) -> float:
    counts = [max(float(c), SPRT_EPS) for c in counts]
    n, mu, var = _mean_var(values, counts)
    if var <= 0:
        return 0.0
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return n * (s1 - s0) * (2.0 * mu - s0 - s1) / (2.0 * var)


def sprt_llr_trinomial(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio (logistic Elo hypotheses) from W/D/L counts."""
    if wins + draws + losses == 0:
        return 0.0
    return _llr((1.0, 0.5, 0.0), (wins, draws, losses), elo0, elo1)


def sprt_llr_pentanomial(pairs: Sequence[int], elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio from pentanomial pair counts (what fishtest uses)."""
    if sum(pairs) == 0:
        return 0.0
    return _llr((0.0, 0.25, 0.5, 0.75, 1.0), pairs, elo0, elo1)


def sprt_decision(llr: float, bounds: SprtBounds, pairs: int = SPRT_MIN_PAIRS) -> str | None:
    """'H1' (elo1 accepted), 'H0' (elo0 accepted) or None (keep playing, as always before
    SPRT_MIN_PAIRS game pairs)."""
    if pairs < SPRT_MIN_PAIRS:
        return None
    if llr >= bounds.upper:
        return "H1"
    if llr <= bounds.lower:
        return "H0"
    return None


# --------------------------------------------------------------------------- rating fit


@dataclass(frozen=True)
class RatingFit(Interval):
    """One absolute rating fitted against opponents of known rating."""

    rating: float
    lower: float
    upper: float
    games: float
    #: True when the player won or lost everything: the ML estimate sits at the search bound
    at_bound: bool


def fit_rating(
    opponents: Sequence[float],
    scores: Sequence[float],
    games: Sequence[float],
    margin: float = 800.0,
) -> RatingFit:
    """Maximum-likelihood rating R from per-opponent results.

    ``opponents[i]`` is an opponent's rating, ``scores[i]`` the points scored against it and
    ``games[i]`` the games played. Each game is modelled as Bernoulli with mean
    ``elo_to_score(R - opponent)``; the likelihood is concave in R and its stationarity condition,
    ``sum(games * expected) == sum(scores)``, is monotone, so bisection finds it exactly. The
    interval comes from the Fisher information; treating draws as half a win that way slightly
    overstates the variance (conservative). With a perfect or zero score the estimate is
    unbounded, so it is clamped to ``margin`` Elo beyond the opponents and flagged ``at_bound``.
    """
    if not (len(opponents) == len(scores) == len(games)) or not opponents:
        raise ValueError("need equally long, non-empty opponents/scores/games")
    total_games = float(sum(games))
    total_score = float(sum(scores))
    if total_games <= 0:
        raise ValueError("no games to fit")
    lo, hi = min(opponents) - margin, max(opponents) + margin

    def excess(rating: float) -> float:
        expected = sum(g * elo_to_score(rating - r) for r, g in zip(opponents, games, strict=True))
        return expected - total_score

    at_bound = total_score <= 0 or total_score >= total_games
    if excess(lo) >= 0:
        rating, at_bound = lo, True
    elif excess(hi) <= 0:
        rating, at_bound = hi, True
    else:
        a, b = lo, hi
        for _ in range(100):
            mid = (a + b) / 2.0
            if excess(mid) < 0:
                a = mid
            else:
                b = mid
        rating = (a + b) / 2.0
    slope = math.log(10.0) / 400.0
    info = sum(
        g * elo_to_score(rating - r) * (1.0 - elo_to_score(rating - r)) * slope**2
        for r, g in zip(opponents, games, strict=True)
    )
    half = Z95 / math.sqrt(info) if info > 0 else math.inf
    return RatingFit(rating, rating - half, rating + half, total_games, at_bound)


def level_interval(score: float, games: float) -> tuple[float, float]:
    """95% interval of a score fraction over ``games`` games (Wilson), for error bars."""
    if games <= 0:
        return 0.0, 1.0
    p, n, z = score / games, games, Z95
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # clamped so that it always contains p: rounding leaves 1 - 1e-16 above a perfect score,
    # and an error bar of negative length is refused by matplotlib
    return min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))


def fit_anchored(
    opponents: Sequence[float],
    scores: Sequence[float],
    games: Sequence[float],
    prior_games: float = 1.0,
) -> RatingFit:
    """:func:`fit_rating` with a weak prior, so that every result has a finite rating.

    ``prior_games`` virtual games, all draws, are added: half against the weakest opponent
    and half against the strongest. A player who lost every game then lands below the weakest
    opponent by as much as the real games allow (instead of at an arbitrary search bound),
    with an interval; with many real games the prior moves the estimate very little. The
    returned ``games`` counts real games only, and ``at_bound`` says that the real games were
    all won or all lost (the number then leans on the prior: read it as "below/above").
    """
    if not (len(opponents) == len(scores) == len(games)) or not opponents:
        raise ValueError("need equally long, non-empty opponents/scores/games")
    weakest, strongest = min(opponents), max(opponents)
    half = prior_games / 2.0
    fit = fit_rating(
        [*opponents, weakest, strongest],
        [*scores, half / 2.0, half / 2.0],
        [*games, half, half],
        margin=3000.0,
    )
    total, points = float(sum(games)), float(sum(scores))
    all_one_way = total > 0 and (points <= 0 or points >= total)
    return RatingFit(fit.rating, fit.lower, fit.upper, total, all_one_way)

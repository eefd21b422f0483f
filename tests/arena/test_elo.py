"""Elo statistics against hand-computed values (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from oneply.arena import elo


def test_score_to_elo_known_values() -> None:
    # 0.75 → -400·log10(1/0.75 − 1) = -400·log10(1/3) = 400·0.477121 = 190.85
    assert elo.score_to_elo(0.75) == pytest.approx(190.849, abs=1e-3)
    assert elo.score_to_elo(0.5) == 0.0
    assert elo.score_to_elo(0.25) == pytest.approx(-190.849, abs=1e-3)
    # 10/11 → -400·log10(0.1) = 400
    assert elo.score_to_elo(10 / 11) == pytest.approx(400.0)
    assert math.isfinite(elo.score_to_elo(1.0)) and math.isfinite(elo.score_to_elo(0.0))


def test_elo_to_score_inverts() -> None:
    for d in (-600.0, -35.5, 0.0, 12.0, 400.0):
        assert elo.score_to_elo(elo.elo_to_score(d)) == pytest.approx(d, abs=1e-6)


def test_trinomial_hand_case() -> None:
    # W=6 D=2 L=2: μ = 7/10 = 0.7
    # σ² = (6·0.3² + 2·0.2² + 2·0.7²)/10 = (0.54 + 0.08 + 0.98)/10 = 0.16
    # se = √(0.16/10) = 0.126491; μ ± 1.959964·se = [0.452082, 0.947918]
    # lower = -400·log10(1/0.452082 − 1) = -33.40; upper = -400·log10(1/0.947918 − 1) = 504.0
    est = elo.trinomial(6, 2, 2)
    assert est.score == pytest.approx(0.7)
    assert est.elo == pytest.approx(147.19, abs=0.01)  # -400·log10(3/7)
    assert est.lower == pytest.approx(-33.40, abs=0.02)
    assert est.upper == pytest.approx(504.02, abs=0.05)
    assert est.pm == pytest.approx((504.02 + 33.40) / 2, abs=0.05)
    # LOS = Φ((0.7 − 0.5)/0.126491) = Φ(1.5811) = 0.94307
    assert est.los == pytest.approx(0.94307, abs=1e-4)
    # nElo = 0.2/√0.16 · 800/ln10 = 0.5 · 347.43 = 173.72
    assert est.nelo == pytest.approx(173.72, abs=0.01)


def test_pentanomial_symmetric_hand_case() -> None:
    # pairs [LL, LD, DD|WL, WD, WW] = [1, 2, 4, 2, 1], normalised values 0, .25, .5, .75, 1
    # μ = 0.5; σ² = (1·0.25 + 2·0.0625 + 0 + 2·0.0625 + 1·0.25)/10 = 0.075
    # se = √(0.075/10) = 0.0866025; μ + 1.959964·se = 0.669741
    # upper = -400·log10(1/0.669741 − 1) = -400·log10(0.493106) = 122.82; lower = −122.82
    est = elo.pentanomial([1, 2, 4, 2, 1])
    assert est.elo == 0.0
    assert est.n == 10
    assert est.upper == pytest.approx(122.82, abs=0.02)
    assert est.lower == pytest.approx(-122.82, abs=0.02)
    assert est.los == pytest.approx(0.5)


def test_pentanomial_tighter_than_trinomial_for_same_games() -> None:
    # 10 pairs each "one win, one loss" (opening decides the game): trinomial sees W=10 L=10
    # (σ² = 0.25 per game), pentanomial sees ten pairs of exactly 1 point (σ² = 0): no spread.
    # A regularly mixed case: pairs [0, 2, 6, 2, 0] vs the same games as W/D/L.
    # Games: LD pairs → 0 W,1 D,1 L; 6 middle pairs as WL → 6 W, 6 L; WD → 1 W, 1 D.
    # trinomial W=8 D=4 L=8: σ² = (8·0.25 + 0 + 8·0.25)/20 = 0.2, se = 0.1, ± ≈ 138
    # pentanomial σ² = (2·0.0625 + 2·0.0625)/10 = 0.025, se = 0.05, ± ≈ 68.6
    tri = elo.trinomial(8, 4, 8)
    pen = elo.pentanomial([0, 2, 6, 2, 0])
    assert tri.score == pen.score == 0.5
    assert pen.pm < tri.pm / 1.9
    assert pen.upper == pytest.approx(elo.score_to_elo(0.5 + 1.959964 * 0.05), abs=1e-3)


def test_pentanomial_needs_five_bins() -> None:
    with pytest.raises(ValueError):
        elo.pentanomial([1, 2, 3])


def test_empty_counts_are_harmless() -> None:
    est = elo.trinomial(0, 0, 0)
    assert est.n == 0 and est.elo == 0.0 and est.los == 0.5
    assert elo.draw_ratio(0, 0, 0) == 0.0
    assert elo.sprt_llr_pentanomial([0, 0, 0, 0, 0], 0, 5) == 0.0


def test_the_sprt_waits_for_ten_pairs_before_deciding() -> None:
    """One drawn pair (1 point) regularised alone has almost no variance: its LLR alone
    crosses the H0 bound of [0, 50], which must not end a match after two games."""
    bounds = elo.sprt_bounds(0.05, 0.05)
    one_pair = elo.sprt_llr_pentanomial([0, 0, 1, 0, 0], 0.0, 50.0)
    assert one_pair <= bounds.lower  # the degenerate estimate the minimum guards against
    assert elo.sprt_decision(one_pair, bounds, pairs=1) is None
    assert elo.sprt_decision(one_pair, bounds, pairs=elo.SPRT_MIN_PAIRS) == "H0"
    ten = elo.sprt_llr_pentanomial([1, 2, 4, 2, 1], 0.0, 50.0)  # ten balanced pairs
    assert elo.sprt_decision(ten, bounds, pairs=10) is None


def test_draw_ratio_and_classic_los() -> None:
    assert elo.draw_ratio(3, 5, 2) == 0.5
    assert elo.los_trinomial(7, 7) == 0.5
    # W=10, L=0: ½(1 + erf(10/√20)) = ½(1 + erf(2.23607)) = 0.99922
    assert elo.los_trinomial(10, 0) == pytest.approx(0.99922, abs=1e-5)


def test_pair_points_index() -> None:
    assert elo.pair_points(1.0, 1.0) == 4
    assert elo.pair_points(1.0, 0.0) == 2
    assert elo.pair_points(0.5, 0.0) == 1


def test_sprt_bounds() -> None:
    # α = β = 0.05: ln(0.05/0.95) = −2.944439, ln(0.95/0.05) = +2.944439
    b = elo.sprt_bounds(0.05, 0.05)
    assert b.lower == pytest.approx(-2.944439, abs=1e-6)
    assert b.upper == pytest.approx(2.944439, abs=1e-6)
    assert elo.sprt_decision(3.0, b) == "H1"
    assert elo.sprt_decision(-3.0, b) == "H0"
    assert elo.sprt_decision(0.0, b) is None
    with pytest.raises(ValueError):
        elo.sprt_bounds(0.0, 0.05)


def test_sprt_llr_hand_case() -> None:
    # trinomial W=60 D=20 L=20 (N=100), μ = 0.7, σ² = (60·0.09 + 20·0.04 + 20·0.49)/100 = 0.16
    # H0 = 0 Elo → s0 = 0.5; H1 = 100 Elo → s1 = 1/(1+10^-0.25) = 0.640065
    # LLR = N (s1−s0)(2μ−s0−s1)/(2σ²) = 100·0.140065·(1.4 − 1.140065)/0.32 = 11.378
    llr = elo.sprt_llr_trinomial(60, 20, 20, 0.0, 100.0)
    assert llr == pytest.approx(11.378, abs=0.01)
    # symmetric result between the hypotheses at ±x → LLR 0; worse than H0 → negative
    assert elo.sprt_llr_trinomial(10, 10, 10, -20.0, 20.0) == pytest.approx(0.0, abs=1e-9)
    assert elo.sprt_llr_pentanomial([10, 10, 10, 5, 1], 0.0, 10.0) < 0


def test_sprt_llr_pentanomial_hand_case() -> None:
    # pairs [0, 0, 5, 5, 0] → μ = 0.625, σ² = (5·0.125² + 5·0.125²)/10 = 0.015625; empty bins get
    # 0.001 each (fishtest regularisation): n = 10.003, μ' = 6.25075/10.003 = 0.624888,
    # σ²' ≈ 0.015655. H0 0, H1 50 → s0 = 0.5, s1 = 0.571463
    # LLR = 10.003 · 0.071463 · (1.249776 − 1.071463)/(2 · 0.015655) = 4.0717
    llr = elo.sprt_llr_pentanomial([0, 0, 5, 5, 0], 0.0, 50.0)
    assert llr == pytest.approx(4.07, abs=0.02)


def test_fit_rating_single_opponent() -> None:
    # 75 points from 100 games against 2000 → R = 2000 + 190.85
    # Fisher info = 100·0.75·0.25·(ln10/400)² → se = 400/ln10/√18.75 = 173.72/4.3301 = 40.12
    fit = elo.fit_rating([2000.0], [75.0], [100.0])
    assert fit.rating == pytest.approx(2190.85, abs=0.01)
    assert fit.pm == pytest.approx(1.959964 * 40.12, abs=0.1)
    assert not fit.at_bound


def test_fit_rating_two_opponents_consistent() -> None:
    # a 2000 player expects 0.759747 vs 1800 and 0.240253 vs 2200 (10^0.5 = 3.16228)
    s = elo.elo_to_score(200.0)
    fit = elo.fit_rating([1800.0, 2200.0], [40 * s, 40 * (1 - s)], [40.0, 40.0])
    assert fit.rating == pytest.approx(2000.0, abs=1e-6)
    assert fit.lower < 2000.0 < fit.upper


def test_fit_rating_perfect_score_is_flagged() -> None:
    fit = elo.fit_rating([1500.0, 1600.0], [10.0, 10.0], [10.0, 10.0])
    assert fit.at_bound
    assert fit.rating == pytest.approx(2400.0)
    with pytest.raises(ValueError):
        elo.fit_rating([], [], [])


def test_level_interval_contains_score() -> None:
    lo, hi = elo.level_interval(7.0, 10.0)
    assert lo < 0.7 < hi
    assert elo.level_interval(0.0, 10.0)[0] == 0.0
    for games in range(1, 60):  # perfect and zero scores, where rounding used to fall outside
        assert elo.level_interval(games, games)[1] == 1.0
        assert elo.level_interval(0.0, games)[0] == 0.0


# --------------------------------------------------------------------------- fit_anchored

ANCHORS = [-400.0, 0.0, 1160.0, 1350.0, 1500.0]


def test_fit_anchored_recovers_a_known_rating_from_expected_results() -> None:
    # every opponent played 2000 times and scored exactly its expectation at R = 700
    for truth in (-600.0, 250.0, 700.0, 1420.0):
        games = [2000.0] * len(ANCHORS)
        scores = [g * elo.elo_to_score(truth - r) for g, r in zip(games, ANCHORS, strict=True)]
        fit = elo.fit_anchored(ANCHORS, scores, games)
        assert fit.rating == pytest.approx(truth, abs=3.0)
        assert fit.lower < truth < fit.upper and not fit.at_bound
        assert fit.games == sum(games)  # the prior's virtual games are not counted


def test_fit_anchored_interval_covers_sampled_results() -> None:
    # games drawn from known Elo differences: the 95% interval should hold the truth in about
    # 95% of seeds (binomial: 20 seeds, at least 16 covered unless the interval is wrong)
    import random

    truth, covered = 300.0, 0
    for seed in range(20):
        rng = random.Random(seed)
        games = [40.0] * len(ANCHORS)
        scores = [
            float(sum(rng.random() < elo.elo_to_score(truth - r) for _ in range(40)))
            for r in ANCHORS
        ]
        fit = elo.fit_anchored(ANCHORS, scores, games)
        assert abs(fit.rating - truth) < 250.0
        covered += fit.lower <= truth <= fit.upper
    assert covered >= 16


def test_fit_anchored_all_losses_gives_a_finite_rating_below_everyone() -> None:
    games = [20.0, 40.0, 20.0, 10.0]
    fit = elo.fit_anchored([-400.0, 0.0, 1160.0, 1350.0], [0.0] * 4, games)
    assert math.isfinite(fit.rating) and math.isfinite(fit.lower) and math.isfinite(fit.upper)
    assert fit.lower < fit.rating < fit.upper < -400.0 + 200.0
    assert fit.rating < -400.0 and fit.at_bound
    more = elo.fit_anchored([-400.0, 0.0, 1160.0, 1350.0], [0.0] * 4, [g * 4 for g in games])
    assert more.rating < fit.rating  # more evidence of losing: lower still, never a fixed bound


def test_fit_anchored_all_wins_lands_above_the_strongest() -> None:
    fit = elo.fit_anchored([0.0, 1350.0], [20.0, 10.0], [20.0, 10.0])
    assert fit.rating > 1350.0 and math.isfinite(fit.upper) and fit.at_bound


def test_fit_anchored_rejects_mismatched_input() -> None:
    with pytest.raises(ValueError):
        elo.fit_anchored([0.0], [1.0, 2.0], [2.0])

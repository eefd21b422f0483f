"""The anchor calibration's joint fit on results generated from known ratings."""

from __future__ import annotations

import json

import pytest

from oneply.arena import elo
from oneply.arena.anchors import fit_pool, read_match


def expected(a: str, b: str, truth: dict[str, float], games: float) -> tuple:
    return a, b, games * elo.elo_to_score(truth[a] - truth[b]), games


def test_fit_pool_recovers_a_chain_of_known_ratings() -> None:
    # only neighbours meet, as in the real calibration; sf-elo1350 is the one fixed anchor
    truth = {"sf-elo1350": 1350.0, "b": 1000.0, "c": 600.0, "d": 150.0, "e": -300.0}
    chain = ["sf-elo1350", "b", "c", "d", "e"]
    results = [expected(x, y, truth, 4000.0) for x, y in zip(chain, chain[1:], strict=False)]
    fits = fit_pool(results)
    assert set(fits) == {"b", "c", "d", "e"}
    for name, fit in fits.items():
        assert fit.rating == pytest.approx(truth[name], abs=5.0)


def test_fit_pool_keeps_one_sided_results_finite() -> None:
    results = [("greedy", "random", 20.0, 20.0), ("sf-elo1350", "greedy", 20.0, 20.0)]
    fits = fit_pool(results)
    assert fits["random"].rating < fits["greedy"].rating < 1350.0
    assert fits["random"].at_bound and not fits["greedy"].at_bound  # greedy is bracketed


def test_fit_pool_needs_an_anchor() -> None:
    with pytest.raises(ValueError, match="anchor"):
        fit_pool([("a", "b", 1.0, 2.0)])


def test_read_match_takes_points_from_engine_a(tmp_path) -> None:
    path = tmp_path / "m.json"
    results = {"wins": 3, "draws": 2, "losses": 5, "games": 10}
    path.write_text(
        json.dumps({"engine_a": {"name": "x"}, "engine_b": {"name": "y"}, "results": results})
    )
    assert read_match(path) == ("x", "y", 4.0, 10.0)

"""`oneply train campaign rate`: suite runs' games added to a ledger row, and the curve's
rating panel (training/lab/campaign_rating.py, training/lab/campaign_curve.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from oneply.arena import elo
from oneply.arena.suite_result import OpponentResult, SuiteResult, combined_rating
from oneply.engine.errors import CommandError
from oneply.training.lab import campaign, campaign_curve

ANCHORS = {"sf-skill0": 1145.0, "sf-elo1350": 1350.0}


def _result(model: str, games: dict[str, tuple[int, int, int]]) -> SuiteResult:
    opponents = [OpponentResult(name, ANCHORS[name], *wdl) for name, wdl in games.items()]
    return SuiteResult(model=model, opponents=opponents, rating=combined_rating(opponents))


def write_run(
    path: Path,
    model: SuiteResult,
    baseline: SuiteResult | None = None,
    seed: int = 1,
    tc: str = "tc=5+0.05",
    search_nodes: int = 0,
) -> Path:
    """A results file as `oneply strength --json` writes it."""
    data = model.to_dict()
    data["search_nodes"] = search_nodes
    data["settings"] = {"time_control": tc, "levels": [1350], "seed": seed}
    if baseline is not None:
        data["baseline"] = baseline.to_dict()
    path.write_text(json.dumps(data))
    return path


def _ledger(tmp_path: Path) -> Path:
    rows = [
        {"session": "a", "train_seconds": 3600, "label_seconds": 1800, "val_loss": 3.5},
        {"session": "b", "train_seconds": 3600, "label_seconds": 1800, "val_loss": 3.4},
    ]
    (tmp_path / campaign.LEDGER).write_text(json.dumps(rows))
    return tmp_path


def rate(ledger: Path, *argv: str) -> list[dict]:
    parser = argparse.ArgumentParser()
    campaign.add_arguments(parser)
    assert campaign.run(parser.parse_args(["rate", "--ledger", str(ledger), *argv])) == 0
    return json.loads((ledger / campaign.LEDGER).read_text())


def test_the_games_of_every_run_are_summed_and_rated_as_one(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    first = write_run(tmp_path / "r1.json", _result("b.onnx", {"sf-skill0": (30, 10, 60)}))
    second = _result("b.onnx", {"sf-skill0": (20, 0, 80), "sf-elo1350": (5, 0, 15)})
    rows = rate(ledger, "--session", "b", "--suite", str(first))
    rows = rate(ledger, "--suite", str(write_run(tmp_path / "r2.json", second, seed=2)))
    suite = rows[1]["suite"]
    games = {o["name"]: (o["wins"], o["draws"], o["losses"]) for o in suite["opponents"]}
    assert games == {"sf-skill0": (50, 10, 140), "sf-elo1350": (5, 0, 15)}
    expected = elo.fit_anchored([1145.0, 1350.0], [55.0, 5.0], [200, 20])
    assert suite["rating"] == pytest.approx(expected.rating)
    assert suite["pm"] == pytest.approx(expected.pm) and suite["games"] == 220
    assert [(r["seed"], r["side"]) for r in suite["runs"]] == [(1, "model"), (2, "model")]
    assert "suite" not in rows[0]  # the other rows are untouched
    assert campaign_curve.suite_rating(rows[1]) == (suite["rating"], suite["pm"])
    point = campaign_curve.cumulative(rows)[1]
    assert f"suite {suite['rating']:.0f} ± {suite['pm']:.0f}" in campaign_curve.format_point(point)
    assert (ledger / campaign.PLOT).stat().st_size > 10_000


def test_the_row_can_be_the_runs_baseline(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    new, old = (
        _result("new.onnx", {"sf-skill0": (40, 0, 60)}),
        _result("old.onnx", {"sf-skill0": (25, 0, 75)}),
    )
    run = write_run(tmp_path / "r.json", new, old)
    rows = rate(ledger, "--session", "a", "--as-baseline", "--suite", str(run))
    assert rows[0]["suite"]["opponents"][0]["wins"] == 25
    assert rows[0]["suite"]["runs"][0]["model"] == "old.onnx"
    rows = rate(ledger, "--session", "b", "--suite", str(run))  # and the other side its own row
    assert rows[1]["suite"]["opponents"][0]["wins"] == 40
    alone = write_run(tmp_path / "alone.json", new, seed=3)
    with pytest.raises(CommandError, match="no baseline"):
        rate(ledger, "--session", "a", "--as-baseline", "--suite", str(alone))


def test_the_committed_ledger_keeps_no_path_of_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    inside, outside = str(tmp_path / "runs" / "m.onnx"), "/elsewhere/27f.onnx"
    ledger = _ledger(tmp_path)
    run = write_run(tmp_path / "r.json", _result(inside, {"sf-skill0": (40, 0, 60)}))
    rows = rate(ledger, "--session", "a", "--suite", str(run))
    far = write_run(tmp_path / "f.json", _result(outside, {"sf-skill0": (1, 0, 9)}), seed=2)
    rows = rate(ledger, "--session", "b", "--suite", str(far))
    assert rows[0]["suite"]["runs"][0]["model"] == "runs/m.onnx"
    assert rows[1]["suite"]["runs"][0]["model"] == "27f.onnx"


def test_runs_the_curve_cannot_compare_are_refused(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    result = _result("b.onnx", {"sf-skill0": (30, 10, 60)})
    run = write_run(tmp_path / "r1.json", result)
    rate(ledger, "--suite", str(run))
    before = (ledger / campaign.LEDGER).read_text()
    with pytest.raises(CommandError, match="already"):  # its games would count twice
        rate(ledger, "--suite", str(run))
    other_clock = write_run(tmp_path / "r2.json", result, seed=2, tc="tc=60+0.6")
    with pytest.raises(CommandError, match="tc=60\\+0.6.*not on one scale"):
        rate(ledger, "--session", "a", "--suite", str(other_clock))
    searched = write_run(tmp_path / "r3.json", result, seed=3, search_nodes=128)
    with pytest.raises(CommandError, match="look-ahead"):
        rate(ledger, "--suite", str(searched))
    with pytest.raises(CommandError, match="no row 'c'.*rows: a, b"):
        rate(
            ledger,
            "--session",
            "c",
            "--suite",
            str(write_run(tmp_path / "r4.json", result, seed=4)),
        )
    (tmp_path / "other.json").write_text(json.dumps({"session": "a"}))
    with pytest.raises(CommandError, match="campaign rate: .* not a results file"):
        rate(ledger, "--suite", str(tmp_path / "other.json"))
    assert (ledger / campaign.LEDGER).read_text() == before  # nothing half-written

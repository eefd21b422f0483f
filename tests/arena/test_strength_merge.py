"""`oneply strength --merge`: runs of other seeds add up to one run, game for game, and only
runs of the same measurement merge. The runs are written by the suite's own JSON writer."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from oneply.arena import elo, strength
from oneply.arena.head_to_head import HeadToHead
from oneply.arena.material import Giveaways
from oneply.arena.strength_report import to_json
from oneply.arena.suite_result import OpponentResult, SuiteResult, combined_rating
from oneply.engine.cli import main as cli_main


def _config(*argv: str) -> strength.StrengthConfig:
    parser = argparse.ArgumentParser()
    strength.add_arguments(parser)
    return strength.strength_config(parser.parse_args(["m.onnx", *argv]))


def _result(model: str, skill0: tuple[int, int, int], level: tuple[int, int, int]) -> SuiteResult:
    opponents = [
        OpponentResult("sf-skill0", 1145.0, *skill0, seconds=10.0, gives=Giveaways(500, 7)),
        OpponentResult("sf-elo1350", 1350.0, *level, seconds=5.0, gives=Giveaways(100, 2)),
    ]
    return SuiteResult(model, opponents=opponents, rating=combined_rating(opponents), seconds=15.0)


def _write_run(path: Path, seed: int, new: tuple, old: tuple, *argv: str) -> Path:
    results = [_result("new.onnx", *new), _result("old.onnx", *old)]
    data = to_json(results, _config("--seed", str(seed), *argv), strength.CAVEAT)
    path.write_text(json.dumps(data))
    return path


def test_runs_of_other_seeds_add_up_game_for_game(tmp_path: Path, capsys) -> None:
    a = _write_run(tmp_path / "a.json", 1, ((30, 5, 65), (4, 1, 15)), ((25, 5, 70), (3, 1, 16)))
    b = _write_run(tmp_path / "b.json", 2, ((40, 3, 57), (6, 0, 14)), ((28, 4, 68), (2, 2, 16)))
    out = tmp_path / "merged.json"
    assert cli_main(["strength", "--merge", str(a), str(b), "--json", str(out)]) == 0
    merged = json.loads(out.read_text())
    skill0, level = merged["opponents"]
    assert (skill0["wins"], skill0["draws"], skill0["losses"]) == (70, 8, 122)
    assert (level["wins"], level["draws"], level["losses"]) == (10, 1, 29)
    assert skill0["gives_material"]["model"] == [14, 1000]
    summed = [
        OpponentResult("sf-skill0", 1145.0, 70, 8, 122),
        OpponentResult("x", 1350.0, 10, 1, 29),
    ]
    fit = combined_rating(summed)
    assert fit is not None and merged["rating"]["rating"] == pytest.approx(fit.rating)
    singles = [json.loads(p.read_text())["rating"]["pm"] for p in (a, b)]
    assert merged["rating"]["pm"] < min(singles)  # more games, a narrower interval
    baseline = merged["baseline"]["opponents"][0]
    assert (baseline["wins"], baseline["draws"], baseline["losses"]) == (53, 9, 138)
    diff = merged["comparison"]
    old_fit = merged["baseline"]["rating"]["rating"]
    assert diff["rating_diff"] == pytest.approx(merged["rating"]["rating"] - old_fit)
    assert merged["settings"]["seed"] == [1, 2] and merged["merged"] == [str(a), str(b)]
    printed = capsys.readouterr().out
    assert "2 runs merged (seeds 1, 2" in printed and "70/8/122" in printed
    assert f"→ {diff['verdict']}" in printed


def test_only_runs_of_the_same_measurement_merge(tmp_path: Path, capsys) -> None:
    games = (((30, 5, 65), (4, 1, 15)), ((25, 5, 70), (3, 1, 16)))
    a = _write_run(tmp_path / "a.json", 1, *games)
    cases = {
        "one seed": _write_run(tmp_path / "same-seed.json", 1, *games),
        "time_control": _write_run(tmp_path / "tc.json", 2, *games, "--tc", "10+0.1"),
        "levels": _write_run(tmp_path / "levels.json", 3, *games, "--levels", "1350,1600"),
    }
    other = json.loads(a.read_text())
    other["model"], other["settings"]["seed"] = "other.onnx", 4
    cases["model other.onnx"] = tmp_path / "model.json"
    cases["model other.onnx"].write_text(json.dumps(other))
    cases["not a results file"] = tmp_path / "notes.json"
    cases["not a results file"].write_text(json.dumps({"model": "new.onnx"}))
    for message, path in cases.items():
        assert cli_main(["strength", "--merge", str(a), str(path)]) == 2
        assert message in capsys.readouterr().err
    assert cli_main(["strength", "new.onnx", "--merge", str(a)]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli_main(["strength"]) == 2
    assert "--merge RUN.json" in capsys.readouterr().err


def test_merge_sums_the_runs_head_to_head(tmp_path: Path, capsys) -> None:
    games = (((30, 5, 65), (4, 1, 15)), ((25, 5, 70), (3, 1, 16)))
    paths = []
    for seed, head in (
        (1, HeadToHead("new.onnx", "old.onnx", 10, 4, 6, pairs=[1, 2, 3, 2, 2])),
        (2, HeadToHead("new.onnx", "old.onnx", 9, 2, 9, pairs=[2, 2, 2, 2, 2])),
    ):
        path = _write_run(tmp_path / f"{seed}.json", seed, *games)
        data = json.loads(path.read_text())
        data["head_to_head"] = head.to_dict()
        path.write_text(json.dumps(data))
        paths.append(str(path))
    out = tmp_path / "merged.json"
    assert cli_main(["strength", "--merge", *paths, "--json", str(out)]) == 0
    merged = json.loads(out.read_text())["head_to_head"]
    assert (merged["wins"], merged["draws"], merged["losses"]) == (19, 6, 15)
    assert merged["pentanomial"] == [3, 4, 5, 4, 4] and merged["runs"] == 2
    assert merged["elo"]["elo"] == pytest.approx(elo.pentanomial([3, 4, 5, 4, 4]).elo)
    assert "head-to-head new.onnx vs old.onnx: 19/6/15 in 40 games" in capsys.readouterr().out

"""`oneply ladder`: level choice (pure) and a tiny real ladder with Stockfish standing in for the
model engine (via --engine), so the test does not depend on a trained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oneply.arena import ladder
from oneply.engine.cli import main as cli_main


def levels_with(*results: tuple[int, float, int]) -> dict[int, ladder.Level]:
    return {elo: ladder.Level(elo, games, points) for elo, points, games in results}


def test_clamp_level() -> None:
    assert ladder.clamp_level(1712) == 1700
    assert ladder.clamp_level(900) == 1350
    assert ladder.clamp_level(3400) == 2850


def test_next_level_jumps_while_saturated_then_follows_fit() -> None:
    assert ladder.next_level(levels_with((1700, 10.0, 10))) == 2100  # all won: +400
    assert ladder.next_level(levels_with((1700, 0.0, 10))) == 1350  # all lost: -400, clamped
    # 75% against 2000 → fit 2190.85 → rounded to 2200
    assert ladder.next_level(levels_with((2000, 7.5, 10))) == 2200


@pytest.mark.slow
def test_ladder_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stockfish: str
) -> None:
    out = tmp_path / "ladder.json"
    pgn = tmp_path / "games" / "ladder.pgn"
    code = cli_main(
        [
            "ladder",
            f"--engine={stockfish}",
            "--option=Threads=1",
            "--levels=1350,2850",
            "--games-per-level=2",
            "--nodes=200",
            "--concurrency=2",
            "--adjudicate-nodes=2000",
            "--quiet",
            f"--json={out}",
            f"--pgn={pgn}",
        ]
    )
    assert code == 0
    games = pgn.read_text().count("[Event ")
    assert games == 4, "--pgn must collect every level's games"
    data = json.loads(out.read_text())
    assert [lv["uci_elo"] for lv in data["levels"]] == [1350, 2850]
    assert all(lv["games"] == 2 for lv in data["levels"])
    assert data["fit"]["games"] == 4
    assert data["fit"]["lower"] <= data["fit"]["rating"] <= data["fit"]["upper"]
    assert "60s+0.6s" in data["caveat"]
    assert Path(data["plot"]).stat().st_size > 1000
    assert "rating" in capsys.readouterr().out


def test_ladder_needs_model_or_engine(tmp_path, capsys) -> None:
    out = tmp_path / "ladder.json"
    assert cli_main(["ladder", "--quiet", "--json", str(out)]) == 2
    assert "give a MODEL file or --engine" in capsys.readouterr().err
    missing = "/nonexistent/model.onnx"
    assert cli_main(["ladder", missing, "--quiet", "--json", str(out)]) == 2
    assert f"no such model file: {missing}" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())  # refused before any game

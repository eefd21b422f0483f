"""The strength suite: the comparison verdict, the puzzle chooser hook, and a tiny end-to-end
`oneply strength` run (real onnxruntime, real engines over UCI, real Stockfish)."""

from __future__ import annotations

import csv
import json

import chess
import pytest

from oneply.arena import elo
from oneply.arena.puzzles import DEV_PUZZLES, read_puzzles, solve_puzzles
from oneply.arena.strength import OpponentResult, SuiteResult, combined_rating
from oneply.arena.strength_report import comparison
from oneply.engine.cli import main as cli_main
from oneply.engine.play.inference import Scorer


def suite(rating: float, pm: float) -> SuiteResult:
    fit = elo.RatingFit(rating, rating - pm, rating + pm, 100.0, False)
    return SuiteResult("m.onnx", rating=fit)


def test_comparison_verdicts() -> None:
    assert comparison(suite(500, 50), suite(300, 50))["verdict"] == "stronger"
    assert comparison(suite(300, 50), suite(500, 50))["verdict"] == "weaker"
    close = comparison(suite(330, 50), suite(300, 50))
    assert close["verdict"] == "not distinguishable at 95%"
    # independent runs: half-widths add in quadrature (√(50² + 50²) = 70.7)
    assert close["rating_diff_ci95"][0] == 30 - (50**2 + 50**2) ** 0.5


def test_combined_rating_uses_the_anchors() -> None:
    low = [OpponentResult("random", 0.0, 10, 0, 10), OpponentResult("greedy", 400.0, 5, 0, 15)]
    high = [OpponentResult("random", 200.0, 10, 0, 10), OpponentResult("greedy", 600.0, 5, 0, 15)]
    a, b = combined_rating(low), combined_rating(high)
    assert a is not None and b is not None
    assert b.rating - a.rating == pytest.approx(200.0, abs=0.5)
    assert combined_rating([]) is None


def test_solve_puzzles_uses_the_chooser(tiny_onnx) -> None:
    """A chooser that always mates solves every mate-in-one; argmax of an untrained model not."""
    with open(DEV_PUZZLES, newline="") as handle:
        mates = {r["PuzzleId"] for r in csv.DictReader(handle) if "mateIn1" in r["Themes"]}
    puzzles = [p for p in read_puzzles(DEV_PUZZLES) if p.id in mates][:20]
    assert len(puzzles) >= 5

    def mate_first(board: chess.Board, scores) -> chess.Move:
        for s in scores:
            board.push(s.move)
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return s.move
        return scores[0].move

    scorer = Scorer(tiny_onnx)
    assert all(solve_puzzles(scorer, puzzles, choose=mate_first))
    assert not all(solve_puzzles(scorer, puzzles))


@pytest.mark.slow
def test_strength_end_to_end(tiny_onnx, tmp_path, capsys) -> None:
    out, png = tmp_path / "s.json", tmp_path / "s.png"
    args = ["strength", str(tiny_onnx), "--baseline", str(tiny_onnx)]
    # greedy ends games fast (it grabs material, adjudication follows); random would drag on
    args += ["--games-random", "0", "--games-greedy", "2", "--games-skill", "0"]
    args += ["--games-per-level", "0", "--puzzle-limit", "8", "--tc", "3+0.03"]
    args += ["--concurrency", "2", "--quiet", "--json", str(out), "--plot", str(png)]
    args += ["--games-head", "2"]
    assert cli_main(args) == 0
    data = json.loads(out.read_text())
    assert {"model", "rating", "opponents", "puzzles", "settings", "baseline", "comparison"} <= set(
        data
    )
    assert {"rating", "lower", "upper", "pm", "games", "at_bound"} <= set(data["rating"])
    assert data["rating"]["lower"] < data["rating"]["rating"] < data["rating"]["upper"]
    assert [o["name"] for o in data["opponents"]] == ["greedy"]
    assert data["opponents"][0]["games"] == 2
    # greedy takes whatever hangs, so the tiny untrained net's moves are counted both sides
    gives, moves = data["opponents"][0]["gives_material"]["model"]
    opponent_moves = data["opponents"][0]["gives_material"]["opponent"][1]
    assert 0 <= gives <= moves and moves > 0 and abs(moves - opponent_moves) <= 2
    assert data["puzzles"]["argmax"]["count"] == 8 and "policy" in data["puzzles"]
    # the model against itself: the difference of the two runs' ratings, read by its interval
    diff = data["comparison"]
    lo, hi = diff["rating_diff_ci95"]
    rating_diff = data["rating"]["rating"] - data["baseline"]["rating"]["rating"]
    assert diff["rating_diff"] == pytest.approx(rating_diff)
    assert lo < diff["rating_diff"] < hi
    assert diff["verdict"] == (
        "stronger" if lo > 0 else "weaker" if hi < 0 else "not distinguishable at 95%"
    )
    assert diff["puzzles_argmax_diff"] == 0  # the same net solves the same puzzles
    assert png.stat().st_size > 10_000
    # the head-to-head: one opening played twice, colours swapped, counted as one pair
    head = data["head_to_head"]
    assert head["games"] == 2 and sum(head["pentanomial"]) == 1
    assert head["wins"] + head["draws"] / 2 == sum(
        k / 2 * n for k, n in enumerate(head["pentanomial"])
    )
    assert data["settings"]["games"]["head"] == 2
    printed = capsys.readouterr().out
    assert f"head-to-head {tiny_onnx} vs {tiny_onnx}: " in printed
    assert "rating:" in printed and "vs baseline" in printed and "gives material" in printed
    assert f"→ {diff['verdict']}" in printed


def test_strength_rejects_a_missing_model(tmp_path, capsys) -> None:
    assert cli_main(["strength", str(tmp_path / "nope.onnx")]) == 2
    assert "no such model file" in capsys.readouterr().err


def test_strength_rejects_a_missing_puzzle_file(tiny_onnx, tmp_path, capsys) -> None:
    args = ["strength", str(tiny_onnx), "--puzzles", str(tmp_path / "none.csv")]
    assert cli_main(args) == 2
    assert "--puzzle-limit 0 skips puzzles" in capsys.readouterr().err

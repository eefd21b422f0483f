"""`oneply strength --search-nodes N`: the model with and without look-ahead, side by side
(real onnxruntime, the real `oneply uci` with option Search, real games)."""

from __future__ import annotations

import argparse
import json

import chess
import pytest

from oneply.arena.puzzles import DEV_PUZZLES, RememberingScorer, read_puzzles, solve_puzzles
from oneply.arena.strength import (
    DEFAULT_TC,
    SuiteResult,
    model_engine,
    parse_nodes,
    solve_dev_puzzles,
)
from oneply.arena.strength_report import pairs
from oneply.engine.cli import main as cli_main
from oneply.engine.play.inference import Scorer
from oneply.engine.play.search import SearchScorer


def test_the_search_run_plays_with_the_option_and_searches_the_puzzles(tiny_onnx) -> None:
    searching = dict(model_engine(str(tiny_onnx), DEFAULT_TC, 1, search=True).options)
    assert searching["Search"] == "true"
    assert "Search" not in dict(model_engine(str(tiny_onnx), DEFAULT_TC, 1).options)
    report = solve_dev_puzzles(str(tiny_onnx), str(DEV_PUZZLES), 12, 1, search_nodes=16)
    puzzles = read_puzzles(DEV_PUZZLES, 12)
    expected = solve_puzzles(SearchScorer(Scorer(tiny_onnx), 16), puzzles, progress=False)
    assert report["argmax"]["accuracy"] == sum(expected) / len(expected)


class CountingScorer:
    """The real scorer, counting the positions it is asked to score."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer, self.positions = scorer, 0

    def score(self, board):
        return self.score_many([board])[0]

    def score_many(self, boards):
        self.positions += len(boards)
        return self.scorer.score_many(boards)


def test_the_policy_pass_searches_only_positions_the_argmax_pass_did_not(tiny_onnx) -> None:
    puzzles = read_puzzles(DEV_PUZZLES, 20)
    counting = CountingScorer(Scorer(tiny_onnx, threads=1))
    remembering = RememberingScorer(counting)
    first = solve_puzzles(remembering, puzzles, progress=False)
    asked = counting.positions
    assert asked >= len(puzzles) and len(remembering.memory) == asked
    assert solve_puzzles(remembering, puzzles, progress=False) == first
    assert counting.positions == asked  # the same lines: nothing scored twice
    # a position reached by another history is another key (repetitions depend on it)
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    assert RememberingScorer.key(board) != RememberingScorer.key(chess.Board())
    assert [s.move for s in remembering.score(board)] == [
        s.move for s in Scorer(tiny_onnx, threads=1).score(board)
    ]


def test_pairs_compare_search_with_its_own_searchless_run_and_models_with_models() -> None:
    plain, searched, baseline = SuiteResult("a"), SuiteResult("a", 64), SuiteResult("b")
    assert pairs([plain, searched, baseline]) == [(searched, plain), (plain, baseline)]
    assert pairs([plain, baseline]) == [(plain, baseline)]
    assert searched.label.endswith("+ search (64 nodes)") and plain.label == "a"


def test_strength_with_search_end_to_end(tiny_onnx, tmp_path, capsys) -> None:
    out = tmp_path / "s.json"
    args = ["strength", str(tiny_onnx), "--search-nodes", "8"]
    args += ["--games-random", "0", "--games-greedy", "2", "--games-skill", "0"]
    args += ["--games-per-level", "0", "--puzzle-limit", "6", "--tc", "3+0.03"]
    args += ["--concurrency", "2", "--quiet", "--json", str(out)]
    assert cli_main(args) == 0
    data = json.loads(out.read_text())
    assert data["search_nodes"] == 0 and data["search"]["search_nodes"] == 8
    assert data["search"]["opponents"][0]["games"] == 2
    assert data["search"]["puzzles"]["argmax"]["count"] == 6
    assert data["search_comparison"]["model"].endswith("+ search (8 nodes)")
    assert "+ search (8 nodes)" in capsys.readouterr().out


def test_curve_points_cap_the_games_at_their_nodes(tiny_onnx) -> None:
    capped = dict(model_engine(str(tiny_onnx), DEFAULT_TC, 1, search=True, nodes=32).options)
    assert capped["Search"] == "true" and capped["SearchNodes"] == "32"
    assert "SearchNodes" not in dict(model_engine(str(tiny_onnx), DEFAULT_TC, 1).options)


def test_nodes_budgets_are_checked() -> None:
    assert parse_nodes("1,8,32") == [1, 8, 32]
    for bad in ("", "8,1", "0,4", "1,1", "a,b"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_nodes(bad)


def test_nodes_curve_end_to_end(tiny_onnx, tmp_path, capsys) -> None:
    """Each point is the suite at its budget: puzzles searched that far, games capped."""
    out, curve, plot = tmp_path / "s.json", tmp_path / "curve.json", tmp_path / "curve.png"
    args = ["strength", str(tiny_onnx), "--nodes-curve", "1,6"]
    args += ["--games-random", "0", "--games-greedy", "2", "--games-skill", "0"]
    args += ["--games-per-level", "0", "--puzzle-limit", "8", "--tc", "3+0.03"]
    args += ["--concurrency", "2", "--quiet", "--json", str(out)]
    args += ["--curve-json", str(curve), "--curve-plot", str(plot)]
    assert cli_main(args) == 0
    points = json.loads(curve.read_text())["points"]
    assert [p["nodes"] for p in points] == [1, 6]
    assert all(p["opponents"][0]["games"] == 2 for p in points)
    puzzles = read_puzzles(DEV_PUZZLES, 8)
    for point in points:
        scorer = SearchScorer(Scorer(tiny_onnx), point["nodes"])
        expected = solve_puzzles(scorer, puzzles, progress=False)
        assert point["puzzles_argmax"] == sum(expected) / len(expected)
    assert plot.stat().st_size > 0
    table = capsys.readouterr().out
    assert "nodes  rating" in table and "greedy" in table
    # one more budget later: the curve grows, the earlier points stay as they were (this run
    # plays no games: its point is the puzzles alone, and the merge is the same)
    grown = [a if a != "1,6" else "3" for a in args]
    grown[grown.index("--games-greedy") + 1] = "0"
    assert cli_main(grown) == 0
    merged = json.loads(curve.read_text())["points"]
    assert [p["nodes"] for p in merged] == [1, 3, 6]
    assert [merged[0], merged[2]] == points
    assert merged[1]["opponents"] == [] and merged[1]["puzzles_argmax"] is not None

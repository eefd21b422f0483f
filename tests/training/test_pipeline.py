"""`oneply train all` end to end: real Stockfish annotations, a few training steps, export,
the engine plays from the file, eval runs; a second run resumes and redoes nothing."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import chess
import onnx
import pytest

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.cli import main
from oneply.engine.play.inference import Scorer
from oneply.training import pipeline
from oneply.training.data.positions import manifest_path

pytestmark = pytest.mark.usefixtures("stockfish")

pytest.importorskip("torch")


@pytest.mark.slow
def test_train_all_tiny_end_to_end_and_rerun_skips_every_step(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    argv = ["train", "all", "--preset", "tiny", "--positions", "20", "--depth", "4"]
    argv += ["--steps", "4", "--batch", "8", "--out", str(out), "--workers", "2"]
    argv += ["--val-percent", "20", "--puzzle-limit", "20", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    model_path, report_path = out / "model.onnx", out / "report.json"
    assert f"model:  {model_path}" in printed and f"report: {report_path}" in printed

    # the engine loads the file and plays a legal move
    scorer = Scorer(model_path, threads=1)
    assert scorer.info.trained and scorer.info.preset == "tiny"
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    best = scorer.score(board)[0].move
    assert best in board.legal_moves

    # the training summary and evaluation metrics travel inside the model file
    props = {p.key: p.value for p in onnx.load(str(model_path)).metadata_props}
    training = json.loads(props["oneply.training"])
    metrics = json.loads(props["oneply.metrics"])
    assert training["steps"] == 4 and training["positions"] > 0
    assert metrics["puzzles"]["count"] == 20  # the dev set ships in arena/data
    report = json.loads(report_path.read_text())
    assert report["training"]["steps"] == 4
    assert (out / "train" / "training.png").exists()
    assert len((out / "positions.txt").read_text().splitlines()) == 20
    annotated = json.loads((out / "annotated" / "manifest.json").read_text())
    assert annotated["positions"] + annotated["skipped"] == 20

    # rerunning finds every step complete
    assert main(argv) == 0
    assert capsys.readouterr().out.count("skip:") == 4


def test_train_all_positions_step_excludes_the_puzzles_given(tmp_path: Path) -> None:
    """`train all --puzzles X`: the positions step must exclude X, as fit does."""
    puzzles = tmp_path / "mine.csv"
    puzzles.write_text("".join(DEV_PUZZLES.read_text().splitlines(keepends=True)[:4]))
    parser = argparse.ArgumentParser()
    pipeline.add_arguments(parser)
    args = parser.parse_args(["--puzzles", str(puzzles), "--workers", "1"])
    config = replace(pipeline.pipeline_config(args), out=tmp_path, positions=3)
    path = pipeline.make_positions(config)
    assert json.loads(manifest_path(path).read_text())["exclude"] == [str(puzzles)]


def test_train_all_refuses_a_missing_puzzle_file(tmp_path: Path, capsys) -> None:
    argv = ["train", "all", "--out", str(tmp_path), "--puzzles", str(tmp_path / "none.csv")]
    assert main(argv) == 2
    assert "none.csv not found" in capsys.readouterr().err


def test_a_failing_step_stops_the_pipeline_with_a_typed_error_and_its_exit_code(
    tmp_path: Path,
) -> None:
    from oneply.engine.errors import CommandError
    from oneply.training.data import annotate

    missing = tmp_path / "no-positions.txt"
    with pytest.raises(CommandError, match="step oneply.training.data.annotate failed") as caught:
        pipeline._call(annotate, [str(missing), "--out", str(tmp_path / "shards")])
    assert caught.value.exit_code == 2  # annotate's own status for bad input

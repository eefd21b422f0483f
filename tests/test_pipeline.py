"""`oneply train all` end to end: real Stockfish annotations, a few training steps, export,
the engine plays from the file, eval runs; a second run resumes and redoes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import onnx
import pytest

from engine.cli import main
from engine.inference import Scorer
from training.evaluate import DEFAULT_PUZZLES

pytest.importorskip("torch")
STOCKFISH = Path("/usr/games/stockfish")
pytestmark = pytest.mark.skipif(not STOCKFISH.exists(), reason="needs Stockfish (REFERENCE §5)")


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
    if DEFAULT_PUZZLES.exists():  # CI has ../shared beside the clone
        assert metrics["puzzles"]["count"] == 20
    else:
        assert "puzzles" not in metrics
    report = json.loads(report_path.read_text())
    assert report["training"]["steps"] == 4
    assert (out / "train" / "training.png").exists()
    assert len((out / "positions.txt").read_text().splitlines()) == 20
    annotated = json.loads((out / "annotated" / "manifest.json").read_text())
    assert annotated["positions"] + annotated["skipped"] == 20

    # rerunning finds every step complete
    assert main(argv) == 0
    assert capsys.readouterr().out.count("skip:") == 4

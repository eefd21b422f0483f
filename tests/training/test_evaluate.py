"""`oneply eval`: the metric definitions, the puzzle rules, and the command on a real model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest

from oneply.arena.puzzles import DEV_PUZZLES, Puzzle, PuzzleRun, puzzle_report
from oneply.engine.cli import main
from oneply.engine.facts.moves import legal_move_ids
from oneply.engine.facts.tokenizer import tokenize
from oneply.engine.model.values import erf
from oneply.training.data.shard_publish import write_shard
from oneply.training.fit import evaluate

# Black to move plays c7c6; then White mates with Ra8# (the line) or Rb8# (also mate).
MATE_FEN = "7k/2p3pp/8/8/8/8/8/RR4K1 b - - 0 1"


def test_erf_matches_the_standard_library() -> None:
    x = np.linspace(-4, 4, 81)
    assert np.allclose(erf(x), [math.erf(v) for v in x], atol=2e-7)


@pytest.mark.parametrize(
    ("x", "y", "tau"),
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 2, 3], [1, 2, 3, 4], 5 / math.sqrt(5 * 6)),  # one tie in x: τ-b, not τ-a
        ([1, 3, 2], [1, 2, 3], 1 / 3),
    ],
)
def test_kendall_tau_b(x, y, tau) -> None:
    assert evaluate.kendall_tau_b(np.array(x, float), np.array(y, float)) == pytest.approx(tau)


def test_kendall_tau_b_is_undefined_without_two_distinct_values() -> None:
    assert math.isnan(evaluate.kendall_tau_b(np.array([0.3]), np.array([0.5])))
    assert math.isnan(evaluate.kendall_tau_b(np.array([0.1, 0.2]), np.array([0.5, 0.5])))


def _peaked(bins: list[int]) -> np.ndarray:
    """Log-probs [n, 128] with (almost) all mass on one bin per move."""
    log_probs = np.full((len(bins), 128), -40.0)
    log_probs[np.arange(len(bins)), bins] = 0.0
    return log_probs - np.log(np.exp(log_probs).sum(-1, keepdims=True))


def test_position_metrics() -> None:
    scores = evaluate.PositionScores()
    # the model prefers move 1 (bin 100), which ties Stockfish's best: a hit; ranking is right
    scores.add(_peaked([10, 100, 50]), np.array([0.1, 0.8, 0.8], np.float32))
    # the model prefers move 0, Stockfish move 1: a miss; ranking reversed
    scores.add(_peaked([120, 5]), np.array([0.2, 0.9], np.float32))
    # one legal move: counts for accuracy, not for τ
    scores.add(_peaked([64]), np.array([0.5], np.float32))
    result = scores.result()
    assert result["positions"] == 3 and result["action_values"] == 6
    assert result["action_accuracy"] == pytest.approx(2 / 3)
    tau_first = (2 + 0) / math.sqrt(3 * 2)  # pairs (0,1), (0,2) concordant, (1,2) tied in y
    assert result["kendall_tau"] == pytest.approx((tau_first - 1.0) / 2)
    # one-hot log loss: -log p(bin of the value) with p ≈ 1 only where the peak is that bin
    wins = np.array([0.1, 0.8, 0.8, 0.2, 0.9, 0.5])
    peaks = [10, 100, 50, 120, 5, 64]
    misses = sum(int(b != evaluate_bin) for b, evaluate_bin in zip(peaks, _bins(wins), strict=True))
    assert result["log_loss_one_hot"] == pytest.approx(misses * 40 / 6, rel=1e-3)
    assert result["log_loss"] > 0


def _bins(wins: np.ndarray) -> list[int]:
    from oneply.engine.model.values import value_to_bin

    return list(value_to_bin(wins))


def _puzzle(moves: str) -> Puzzle:
    return Puzzle("t", MATE_FEN, moves.split(), 1200)


def test_puzzle_rules() -> None:
    right = PuzzleRun(_puzzle("c7c6 a1a8"))
    assert right.board.turn == chess.WHITE  # the opponent's move was applied
    right.play(chess.Move.from_uci("a1a8"))
    assert right.solved is True

    other_mate = PuzzleRun(_puzzle("c7c6 a1a8"))
    other_mate.play(chess.Move.from_uci("b1b8"))
    assert other_mate.solved is True  # any checkmate counts

    wrong = PuzzleRun(_puzzle("c7c6 a1a8"))
    wrong.play(chess.Move.from_uci("a1a2"))
    assert wrong.solved is False

    # a longer line: our move, the opponent's reply from the line, our next move
    longer = PuzzleRun(_puzzle("c7c6 a1a7 h8g8 a7a8"))
    longer.play(chess.Move.from_uci("a1a7"))
    assert longer.solved is None and longer.board.peek().uci() == "h8g8"
    longer.play(chess.Move.from_uci("a7a8"))
    assert longer.solved is True


def test_puzzle_report_bands() -> None:
    puzzles = [Puzzle(str(r), MATE_FEN, [], r) for r in (800, 999, 1000, 1700, 2600)]
    report = puzzle_report(puzzles, [True, False, True, True, False])
    assert report["accuracy"] == pytest.approx(0.6)
    assert report["bands"] == {
        "<1000": {"count": 2, "accuracy": 0.5},
        "1000-1499": {"count": 1, "accuracy": 1.0},
        "1500-1999": {"count": 1, "accuracy": 1.0},
        "≥2500": {"count": 1, "accuracy": 0.0},
    }


@pytest.fixture
def annotated(tmp_path: Path) -> Path:
    board, boards = chess.Board(), []
    for uci in "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1 f8e7".split():
        boards.append(board.copy())
        board.push_uci(uci)
    ids = [legal_move_ids(b) for b in boards]
    wins = [np.linspace(0.2, 0.8, len(i)).astype(np.float32) for i in ids]
    write_shard(
        tmp_path / "data" / "chunk-000000", np.stack([tokenize(b) for b in boards]), ids, wins
    )
    return tmp_path / "data"


def test_eval_command_on_a_real_model(tiny_onnx: Path, annotated: Path, tmp_path: Path, capsys):
    puzzles = tmp_path / "puzzles.csv"
    puzzles.write_text(
        "PuzzleId,FEN,Moves,Rating,Themes,GameUrl\n"
        f"a,{MATE_FEN},c7c6 a1a8,900,mate,\n"
        f"b,{MATE_FEN},c7c6 a1a7 h8g8 a7a8,1600,mate,\n"
    )
    report_file = tmp_path / "report.json"
    argv = ["eval", str(tiny_onnx), "--data", str(annotated), "--split", "all"]
    assert main(argv + ["--puzzles", str(puzzles), "--json", str(report_file)]) == 0
    out = capsys.readouterr().out
    assert "action accuracy" in out and "Kendall tau-b" in out and "1500-1999" in out
    report = json.loads(report_file.read_text())
    assert report["positions"]["positions"] == 10
    assert 0 <= report["positions"]["action_accuracy"] <= 1
    assert -1 <= report["positions"]["kendall_tau"] <= 1
    assert report["puzzles"]["count"] == 2 and set(report["puzzles"]["bands"]) == {
        "<1000",
        "1500-1999",
    }


def test_dev_puzzles_limit(tiny_onnx: Path) -> None:
    if not DEV_PUZZLES.exists():
        pytest.skip("no dev puzzle set beside the repository")
    report = evaluate.evaluate_model(tiny_onnx, puzzle_limit=20)
    assert report["puzzles"]["count"] == 20 and "positions" not in report
    assert len(report["puzzles"]["bands"]) >= 3  # a spread of ratings, not the first 20


@pytest.mark.parametrize("predictor", ["sv", "bc"])
def test_sv_and_bc_models_are_evaluated_by_their_move_ranking(
    predictor: str, annotated: Path, tmp_path: Path
) -> None:
    """No per-move distribution to score: accuracy and τ of the moves as the engine ranks
    them (sv: every child scored; bc: the policy), the same numbers a direct count gives."""
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from oneply.engine.play.inference import Scorer
    from oneply.training.data.dataset import AnnotatedDataset
    from oneply.training.model.export import export_model
    from oneply.training.model.model import PRESETS, ActionValueModel

    torch.manual_seed(3)
    path = tmp_path / f"{predictor}.onnx"
    export_model(
        ActionValueModel(replace(PRESETS["tiny"], predictor=predictor)), path, preset="tiny"
    )
    report = evaluate.evaluate_model(path, data=[annotated], split="all", puzzles=None)
    positions = report["positions"]
    assert positions["positions"] == 10 and "log_loss" not in positions
    scorer, hits = Scorer(path, threads=1), 0
    dataset = AnnotatedDataset([annotated], split="all")
    for index in range(len(dataset)):
        state, _, wins = dataset[index]
        board = evaluate.board_of_tokens(state)
        top = scorer.score(board)[0].move
        hits += bool(wins[list(board.legal_moves).index(top)] >= wins.max() - 1e-4)
    assert positions["action_accuracy"] == pytest.approx(hits / 10)
    assert -1 <= positions["kendall_tau"] <= 1
    assert "log loss" not in evaluate.format_report(report)

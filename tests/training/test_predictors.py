"""The paper's other two predictors (issue 22): state value (sv) and behavioural cloning (bc),
trained on the same shards as action values (training/fit/targets.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import chess
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from oneply.engine.errors import CommandError  # noqa: E402
from oneply.engine.facts.features import SQUARE_NAMES  # noqa: E402
from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.batches import collate  # noqa: E402
from oneply.training.fit.config import CHECKPOINT, METRICS, TrainConfig  # noqa: E402
from oneply.training.fit.targets import (  # noqa: E402
    best_slots,
    hits,
    hl_gauss_targets,
    loss_sum,
    position_values,
)
from oneply.training.fit.validation import TorchScorer  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402
from tests.helpers.training import config, make_shard  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#


def model_of(predictor: str, seed: int = 0) -> ActionValueModel:
    torch.manual_seed(seed)
    return ActionValueModel(dataclasses.replace(PRESETS["tiny"], predictor=predictor)).eval()


def test_sv_and_bc_configs_keep_only_what_reads_the_state() -> None:
    for predictor in ("sv", "bc"):
        config = dataclasses.replace(PRESETS["tiny"], predictor=predictor)
        assert not config.move_features and set(config.features) <= set(SQUARE_NAMES)
        assert config.to_dict()["predictor"] == predictor
    assert "predictor" not in PRESETS["tiny"].to_dict()  # av configs are what they were
    with pytest.raises(ValueError, match="unknown predictor"):
        dataclasses.replace(PRESETS["tiny"], predictor="q")


def test_targets_come_from_what_the_shards_store() -> None:
    """sv: the best move's value; bc: the first move with that value; padding never counts."""
    state = np.zeros(77, dtype=np.int64)
    rows = [
        (state, np.array([5, 9, 11]), np.array([0.2, 0.7, 0.7], dtype=np.float32)),
        (state, np.array([3]), np.array([0.4], dtype=np.float32)),
    ]
    batch = collate(rows)
    assert position_values(batch).tolist() == pytest.approx([0.7, 0.4])
    assert best_slots(batch).tolist() == [1, 0]
    sv = TrainConfig(data=[], out="", predictor="sv")
    log_probs = torch.randn(2, 128).log_softmax(dim=-1)
    best = -(hl_gauss_targets(torch.tensor([0.7, 0.4])) * log_probs).sum()
    assert float(loss_sum(log_probs, batch, sv)) == pytest.approx(float(best), rel=1e-5)
    bc = TrainConfig(data=[], out="", predictor="bc")
    policy = torch.log(torch.tensor([[0.1, 0.6, 0.3], [1.0, 0.0, 0.0]]))
    assert float(loss_sum(policy, batch, bc)) == pytest.approx(-np.log(0.6), rel=1e-5)
    assert hits(policy, batch, "bc").tolist() == [True, True]
    assert hits(torch.log(torch.tensor([[0.1, 0.2, 0.7], [1.0, 0.0, 0.0]])), batch, "bc")[0]
    assert not hits(torch.log(torch.tensor([[0.8, 0.1, 0.1], [1.0, 0.0, 0.0]])), batch, "bc")[0]


@pytest.mark.parametrize(
    ("predictor", "target"), [("sv", "hl_gauss"), ("sv", "one_hot"), ("bc", "hl_gauss")]
)
def test_each_predictor_trains_and_its_loss_falls(
    tmp_path: Path, predictor: str, target: str
) -> None:
    """(bc has one target, the best move: --target does not change it)"""
    data = make_shard(tmp_path / "data", 120)
    out = tmp_path / "run"
    run = config(data, out, steps=16, eval_every=8, predictor=predictor, target=target)
    summary = fit.train(run, quiet=True)
    assert summary["predictor"] == predictor and summary["steps"] == 16
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    val = [r for r in rows if r["split"] == "val"]
    assert train[-1]["loss"] < train[0]["loss"] - 0.2
    assert val[-1]["loss"] < val[0]["loss"]
    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    assert checkpoint["config"]["predictor"] == predictor
    with pytest.raises(CommandError, match="predictor"):  # resumed only as what it is
        fit.train(dataclasses.replace(run, steps=17, predictor="av"), quiet=True)


def test_the_puzzle_check_scores_moves_for_every_predictor() -> None:
    board = chess.Board(MATE_IN_ONE)
    legal = set(board.legal_moves)
    for predictor in ("av", "sv", "bc"):
        scorer = TorchScorer(model_of(predictor), torch.device("cpu"), "shared", bf16=False)
        scores = scorer.score_many([board, chess.Board()])
        assert {s.move for s in scores[0]} == legal and len(scores[1]) == 20
        wins = [s.win for s in scores[0]]
        assert wins == sorted(wins, reverse=True) and all(0 <= w <= 1 for w in wins)
        if predictor == "sv":  # the mate is exact, the rest are the model's guesses
            assert scores[0][0].move == chess.Move.from_uci("a1a8") and wins[0] == 1.0
        if predictor == "bc":
            assert sum(wins) == pytest.approx(1.0, abs=1e-5)

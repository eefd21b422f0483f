"""Issue 81's rows of `oneply train ablate` (training/lab/ablation_variants.ROUND_3): each names one
change against v15's network, the shape rows hold the parameters they claim, and each row's
network (at a test's size) trains a step and exports to a file that computes what torch does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import chess
import numpy as np
import pytest

from oneply.engine.facts.features import ADOPTED_FACTS
from oneply.engine.model.architecture import ATTENTION_FLAGS, parameters
from tests.helpers.model_helpers import file_log_probs, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.engine.play.inference import Scorer, encode_batch  # noqa: E402
from oneply.training.lab import ablation  # noqa: E402
from oneply.training.lab.ablation_variants import BASE_MODEL, ROUND_3, variant_named  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402
from tests.helpers.training import ablate, make_shard  # noqa: E402

MIDDLEGAME_BLACK = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R b - - 3 8"


def full_config(name: str) -> dict:
    """The row's config at its real size (the `small` preset under it)."""
    variant = variant_named(name)
    base = dataclasses.replace(PRESETS["small"], **{**BASE_MODEL, **variant.model})
    return base.to_dict()


def plain(config: dict) -> int:
    """Parameters of the network without its bias tables (what the shape rows hold equal)."""
    stripped = {k: v for k, v in config.items() if k not in ATTENTION_FLAGS}
    return sum(int(np.prod(p.shape)) for p in parameters(stripped))


def test_the_rows_start_from_v15_and_change_what_they_name(tmp_path: Path) -> None:
    configs = {}
    for name in ROUND_3:
        path = tmp_path / name / "init.pt"
        ablation.write_init(variant_named(name), path, seed=5, preset="tiny")
        configs[name] = torch.load(path, weights_only=False)
        config = configs[name]["config"]
        assert config["mirror"] and config["move_features"] and config["features"] == ADOPTED_FACTS
        assert variant_named(name).train == {"rank_weight": 1.0}  # the campaign's loss
    flags = {n: {f for f in ATTENTION_FLAGS if configs[n]["config"].get(f)} for n in ROUND_3}
    assert flags["bias-none"] == set()
    assert flags["bias-square"] == {"square_bias"} and flags["bias-smolgen"] == {"smolgen"}
    assert flags["bias-move"] == {"move_bias"}
    assert all(flags[n] == set(ATTENTION_FLAGS) for n in ROUND_3[4:])
    # same seed: the weights a bias row shares with bias-none start identical
    none = configs["bias-none"]["model"]
    for name in ("bias-square", "bias-smolgen", "bias-move", "bias-all"):
        shared = {k: v for k, v in configs[name]["model"].items() if k in none}
        assert shared.keys() == none.keys()
        assert all(torch.equal(v, none[k]) for k, v in shared.items()), name


def test_the_shape_rows_hold_the_parameters_they_claim() -> None:
    base = plain(full_config("bias-none"))
    assert 1.35e6 < base < 1.45e6 and plain(full_config("bias-all")) == base
    deep = full_config("deep-8x96")
    assert (deep["layers"], deep["width"]) == (8, 96)
    for name in ("deep-8x96", "ffn-1x-wide"):
        assert abs(plain(full_config(name)) / base - 1) < 0.05, name
    assert full_config("ffn-1x")["widening"] == 1 and plain(full_config("ffn-1x")) < 0.6 * base
    assert 2.7e6 < plain(full_config("size-3m")) < 3.3e6
    assert 5.7e6 < plain(full_config("size-6m")) < 6.5e6


def test_round3_names_the_rows_for_only() -> None:
    assert ablation.chosen_names("round3") == list(ROUND_3)
    assert ablation.chosen_names("facts,round3")[:2] == ["facts", "bias-none"]


def small_copy(name: str) -> ActionValueModel:
    """The row's network at a test's size: its flags and widening, 2 layers x 32 (8 x 32 for the
    depth row), 2 heads."""
    config = dataclasses.replace(PRESETS["tiny"], **{**BASE_MODEL, **variant_named(name).model})
    layers = 8 if name == "deep-8x96" else 2
    config = dataclasses.replace(config, layers=layers, width=32, heads=2)
    torch.manual_seed(7)
    return ActionValueModel(config)


@pytest.mark.parametrize("name", ROUND_3)
def test_each_row_trains_a_step_and_exports_with_parity(tmp_path: Path, name: str) -> None:
    model = small_copy(name)
    boards = [chess.Board(), chess.Board(MIDDLEGAME_BLACK)]
    encoded = encode_batch(boards, facts=True)
    tensors = [torch.from_numpy(a) for a in encoded.arrays()]
    targets = torch.randint(0, 128, encoded.ids.shape)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    log_probs = model(tensors[0], tensors[1], "shared", *tensors[2:])
    mask = torch.from_numpy(encoded.ids >= 0)
    loss = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)[mask].mean()
    loss.backward()
    optimizer.step()
    moved = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    for flag_weight in ("square_bias", "move_from_bias", "smolgen_global.weight"):
        if any(k.endswith(flag_weight) for k in before):
            assert any(k.endswith(flag_weight) for k in moved), flag_weight
    model.eval()
    for layout in ("shared", "per_move"):
        path = tmp_path / f"{layout}.onnx"
        export_model(model, path, preset=name, layout=layout, trained=False)
        expected, ids = torch_log_probs(model, boards, layout)
        actual = file_log_probs(Scorer(path, threads=1), boards)
        np.testing.assert_allclose(actual[ids >= 0], expected[ids >= 0], atol=1e-4, rtol=0)


def test_a_round3_row_runs_through_the_ablation(tmp_path: Path) -> None:
    """fit, export and evaluation take a model with every attention bias (tiny's size)."""
    data = make_shard(tmp_path / "data", 160)
    out = tmp_path / "ablate"
    ablate(
        data, out, "--positions", "128", "--games", "0", "--only", "bias-all", "--puzzle-limit", "4"
    )
    row = json.loads((out / "bias-all" / "result.json").read_text())
    assert row["positions_seen"] == 128 and row["val_loss"] > 0
    info = Scorer(out / "bias-all" / "model.onnx", threads=1).info
    assert all(info.config[flag] for flag in ATTENTION_FLAGS)

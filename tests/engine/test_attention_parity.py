"""The attention biases (engine/model/architecture.ATTENTION_FLAGS, format version 6): every
combination is the same network in torch and in the ONNX graph, in both layouts, with and
without the side-to-move view, for the three predictors; each flag changes the scores once
trained; at initialisation a model with them computes what the model without them computes;
and files without them are written as before."""

from __future__ import annotations

import dataclasses
import itertools
import json

import chess
import numpy as np
import onnx
import pytest

from oneply.engine.model.architecture import ATTENTION_FLAGS, parameters
from oneply.engine.model.model_file import written_version
from tests.helpers.model_helpers import file_log_probs, randomise_fact_tables, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.engine.play.inference import Scorer, encode_batch  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402

MIDDLEGAME_BLACK = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R b - - 3 8"
#: promotions, en passant and castling on both wings (the moves whose squares are unusual)
SPECIAL = "r3k2r/1P6/8/3pP3/8/8/6p1/R3K2R w KQkq d6 0 1"


def _combos(names: list[str]) -> list:
    return [
        pytest.param(
            dict(zip(names, c, strict=True)),
            id="-".join(f"{n}={v}" for n, v in zip(names, c, strict=True)),
        )
        for c in itertools.product(*(ATTENTION_FLAGS[n] for n in names))
    ]


def _randomise(model) -> None:
    """The bias tables and smolgen's basis start at zero; parity needs them to matter."""
    randomise_fact_tables(model)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(("square_bias", "move_from_bias", "move_to_bias")):
                parameter.normal_(0.0, 1.0)
            elif name == "smolgen_global.weight":
                parameter.normal_(0.0, 0.5)


def _model(seed: int = 3, randomised: bool = True, **changes) -> ActionValueModel:
    torch.manual_seed(seed)
    model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], **changes)).eval()
    if randomised:
        _randomise(model)
    return model


def _cases() -> list[list[chess.Board]]:
    white, black = chess.Board(), chess.Board(MIDDLEGAME_BLACK)
    special = chess.Board(SPECIAL)
    return [[white], [black], [black, special, special.mirror(), white]]


@pytest.mark.parametrize("flags", _combos(list(ATTENTION_FLAGS)))
@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("layout", ["shared", "per_move"])
def test_onnx_matches_pytorch(tmp_path, layout, mirror, flags):
    model = _model(mirror=mirror, **flags)
    path = tmp_path / f"{layout}.onnx"
    export_model(model, path, preset="tiny", layout=layout, trained=False)
    scorer = Scorer(path, threads=1)
    for boards in _cases():
        expected, ids = torch_log_probs(model, boards, layout)
        actual = file_log_probs(scorer, boards)
        mask = ids >= 0
        np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4, rtol=0)


@pytest.mark.parametrize("flags", _combos(["square_bias", "smolgen"]))
@pytest.mark.parametrize("predictor", ["sv", "bc"])
def test_state_predictors_match_pytorch(tmp_path, predictor, flags):
    """sv and bc have no move token: the board biases only (move_bias is dropped)."""
    model = _model(predictor=predictor, move_bias=True, **flags)
    assert not model.config.move_bias
    path = tmp_path / f"{predictor}.onnx"
    export_model(model, path, preset="tiny", trained=False)
    scorer = Scorer(path, threads=1)
    for boards in _cases():
        encoded = encode_batch(boards, facts=True, move_facts=False)
        tensors = [torch.from_numpy(a) for a in encoded.arrays()]
        with torch.no_grad():
            want = model(tensors[0], tensors[1], "shared", *tensors[2:]).numpy()
        got = scorer.log_probs(*encoded.arrays())
        mask = encoded.ids >= 0 if predictor == "bc" else slice(None)
        np.testing.assert_allclose(got[mask], want[mask], atol=1e-4, rtol=0)


@pytest.mark.parametrize("flag", list(ATTENTION_FLAGS))
def test_each_flag_changes_the_scores_once_its_weights_move(flag):
    """(At initialisation the blocks barely change the residual stream; weights ten times
    larger make the difference show far above round-off.)"""

    def loud(model: ActionValueModel) -> ActionValueModel:
        with torch.no_grad():
            for name, weight in model.named_parameters():
                if name.endswith(("qkv.weight", "proj.weight", "w2.weight", "head.weight")):
                    weight.mul_(10)
        return model

    boards = [chess.Board(MIDDLEGAME_BLACK)]
    for layout in ("shared", "per_move"):
        plain, _ = torch_log_probs(loud(_model()), boards, layout)
        biased, _ = torch_log_probs(loud(_model(**{flag: True})), boards, layout)
        assert np.abs(biased - plain).max() > 1e-2


def test_at_initialisation_the_flags_change_nothing():
    """Made last, from the same seed: the other weights are those of the model without them,
    and the bias tables and smolgen's basis start at zero (a fair ablation row, and a model
    warm-started from one without them computes what its source computes)."""
    plain = _model(randomised=False)
    flags = {name: True for name in ATTENTION_FLAGS}
    biased = _model(randomised=False, **flags)
    weights = biased.state_dict()
    for name, tensor in plain.state_dict().items():
        assert torch.equal(weights[name], tensor), name
    boards = [chess.Board(), chess.Board(MIDDLEGAME_BLACK)]
    for layout in ("shared", "per_move"):
        np.testing.assert_array_equal(
            torch_log_probs(biased, boards, layout)[0], torch_log_probs(plain, boards, layout)[0]
        )


def test_files_with_the_flags_say_format_6_and_the_others_what_they_said(tmp_path):
    base = PRESETS["tiny"].to_dict()
    assert not set(ATTENTION_FLAGS) & set(base)  # configs without them are what they were
    assert written_version(base) == "4"
    assert written_version({**base, "features": ()}) == "3"
    assert written_version({**base, "predictor": "sv"}) == "5"
    for flag in ATTENTION_FLAGS:
        assert written_version({**base, flag: True}) == "6"
    assert written_version({**base, "predictor": "bc", "move_bias": True}) == "5"  # no move token
    model = _model(square_bias=True)
    path = tmp_path / "m.onnx"
    export_model(model, path, preset="tiny", trained=False)
    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert props["oneply.format_version"] == "6"
    assert json.loads(props["oneply.config"])["square_bias"] is True
    assert Scorer(path, threads=1).info.config["square_bias"] is True


def test_the_declaration_counts_the_bias_weights():
    config = {**PRESETS["small"].to_dict(), "square_bias": True, "move_bias": True}
    names = {p.name for p in parameters(config)}
    assert {"blocks.3.square_bias", "blocks.0.move_from_bias", "blocks.2.move_to_bias"} <= names
    assert not any("smolgen" in n for n in names)
    smolgen = {p.name for p in parameters({**config, "smolgen": True})} - names
    assert "smolgen_global.weight" in smolgen and len(smolgen) == 1 + 4 * 5


@pytest.mark.parametrize("layout", ["shared", "per_move"])
def test_an_ffn_widening_other_than_4_exports(tmp_path, layout):
    """The graph's SwiGLU reads the config's widening (the ablation's 1x rows)."""
    model = _model(widening=1, square_bias=True)
    path = tmp_path / "w1.onnx"
    export_model(model, path, preset="tiny", layout=layout, trained=False)
    boards = [chess.Board(MIDDLEGAME_BLACK)]
    expected, _ = torch_log_probs(model, boards, layout)
    actual = file_log_probs(Scorer(path, threads=1), boards)
    np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=0)

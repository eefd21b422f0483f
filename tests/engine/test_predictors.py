"""Model files of the paper's three predictors (issue 22; docs/FORMAT.md §4, version 5): the
graph matches the torch model, the metadata says which predictor, the Scorer plays each, and
action-value files are what they were."""

from __future__ import annotations

import json

import chess
import numpy as np
import onnx
import pytest

from oneply.engine.facts.features import ALL_FACTS
from oneply.engine.model.model_file import BUNDLED_MODEL, ModelFileError
from oneply.engine.model.values import expected_win
from oneply.engine.play.inference import Scorer, encode_batch
from tests.conftest import POSITION_218
from tests.helpers.model_helpers import predictor_model as model_of

torch = pytest.importorskip("torch")

from oneply.training.model.export import export_model  # noqa: E402

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 3 8"


def metadata(path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


def boards() -> list[list[chess.Board]]:
    one_move = chess.Board("k7/8/8/8/8/8/6q1/7K w - - 0 1")
    white = [one_move, chess.Board(MIDDLEGAME), chess.Board(POSITION_218)]
    black = [board.mirror() for board in white]
    return [[b] for b in white + black] + [[chess.Board(), *white, *black]]


@pytest.mark.parametrize("features", [(), ALL_FACTS])
@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("predictor", ["sv", "bc"])
def test_onnx_matches_pytorch(tmp_path, predictor, mirror, features):
    model = model_of(predictor, mirror=mirror, features=features)
    path = tmp_path / f"{predictor}.onnx"
    export_model(model, path, preset="tiny", layout="per_move", trained=False)
    scorer = Scorer(path, threads=1)
    assert scorer.predictor == predictor and scorer.info.layout == "shared"
    inputs = {i.name for i in scorer.session.get_inputs()}
    expected_inputs = {"state"} | ({"moves"} if predictor == "bc" else set())
    assert inputs == expected_inputs | ({"square_facts"} if features else set())
    for batch in boards():
        encoded = encode_batch(batch, facts=bool(features), move_facts=False)
        tensors = [torch.from_numpy(a) for a in encoded.arrays()]
        with torch.no_grad():
            want = model(tensors[0], tensors[1], "shared", *tensors[2:]).numpy()
        got = scorer.log_probs(*encoded.arrays())
        assert got.shape == want.shape
        if predictor == "bc":
            mask = encoded.ids >= 0
            np.testing.assert_allclose(got[mask], want[mask], atol=1e-4, rtol=0)
            assert np.allclose(np.exp(got).sum(-1), 1.0, atol=1e-5)
        else:
            assert got.shape == (len(batch), 128)
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)


def test_metadata_says_the_predictor_and_format_5(tmp_path):
    for predictor in ("sv", "bc"):
        path = tmp_path / f"{predictor}.onnx"
        export_model(model_of(predictor), path, preset="tiny", trained=False)
        props = metadata(path)
        assert props["oneply.format_version"] == "5"
        assert props["oneply.predictor"] == predictor
        assert json.loads(props["oneply.config"])["predictor"] == predictor
    path = tmp_path / "av.onnx"
    export_model(model_of("av"), path, preset="tiny", trained=False)
    props = metadata(path)
    assert props["oneply.format_version"] == "4" and props["oneply.predictor"] == "av"
    assert "predictor" not in json.loads(props["oneply.config"])  # the config it always had


def test_a_predictor_that_disagrees_with_the_config_is_refused(tmp_path):
    source, target = tmp_path / "sv.onnx", tmp_path / "bad.onnx"
    export_model(model_of("sv"), source, preset="tiny", trained=False)
    proto = onnx.load(str(source))
    for prop in proto.metadata_props:
        if prop.key == "oneply.predictor":
            prop.value = "av"
    onnx.save(proto, str(target))
    with pytest.raises(ModelFileError, match="predictor"):
        Scorer(target, threads=1)


def test_old_action_value_files_load_and_score_as_before(tmp_path):
    """A file written before predictors existed (format 4, no predictor in its metadata, as v5
    and every older model) is an av model and scores every move by its expected win."""
    if not BUNDLED_MODEL.is_file():
        pytest.skip("no bundled model in this checkout")
    proto = onnx.load(str(BUNDLED_MODEL))
    kept = [p for p in proto.metadata_props if p.key != "oneply.predictor"]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    old = tmp_path / "old.onnx"
    onnx.save(proto, str(old))
    assert "oneply.predictor" not in metadata(old)
    scorer = Scorer(old, threads=1)
    assert scorer.predictor == "av"
    board = chess.Board(MIDDLEGAME)
    encoded = encode_batch([board], facts=scorer.reads_facts)
    wins = expected_win(scorer.log_probs(*encoded.arrays()))[0]
    want = sorted(zip(encoded.moves[0], wins, strict=True), key=lambda p: -p[1])
    got = scorer.score(board)
    assert [s.move for s in got] == [m for m, _ in want]
    assert [s.win for s in got] == pytest.approx([float(w) for _, w in want])

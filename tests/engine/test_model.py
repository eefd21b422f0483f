"""The transformer's two layouts, the ONNX contract and the Scorer."""

import dataclasses
import itertools
import json

import chess
import numpy as np
import onnx
import pytest

from oneply.engine.facts.features import ALL_FACTS
from oneply.engine.facts.tokenizer import tokenize
from oneply.engine.model.architecture import FLAGS, check_weights, parameters
from oneply.engine.model.model_file import ModelFileError
from oneply.engine.play.inference import Scorer, encode_batch
from tests.conftest import POSITION_218
from tests.helpers.model_helpers import file_log_probs, randomise_fact_tables, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 3 8"


def test_presets_include_9m_with_the_papers_shape():
    config = PRESETS["9m"]
    assert (config.layers, config.heads, config.width) == (8, 8, 256)
    assert 8_000_000 < ActionValueModel(config).num_parameters() < 10_000_000


def test_shared_value_of_a_move_ignores_the_other_moves(tiny_torch_model):
    board = chess.Board(MIDDLEGAME)
    encoded = encode_batch([board], facts=True)
    state, ids, squares, facts = (torch.from_numpy(a) for a in encoded.arrays())

    def run(slots: list[int]) -> torch.Tensor:
        """The moves of these slots (-1: a padded slot) scored in one row."""
        index = torch.tensor(slots).clamp(min=0)
        picked = torch.where(torch.tensor(slots) >= 0, ids[0, index], -1).unsqueeze(0)
        return tiny_torch_model(state, picked, "shared", squares, facts[:, index])[0]

    with torch.no_grad():
        full = run(list(range(ids.shape[1])))
        alone = run([3])[0]
        subset = run([7, 3, 0])[1]
        padded = run([3, -1, -1, -1, -1, -1])[0]
    torch.testing.assert_close(alone, full[3], atol=1e-5, rtol=0)
    torch.testing.assert_close(subset, full[3], atol=1e-5, rtol=0)
    torch.testing.assert_close(padded, full[3], atol=1e-5, rtol=0)


def test_per_move_layout_lets_the_state_see_the_move():
    """The layouts share weights but differ: per_move's state tokens attend to the move. (At
    initialisation the blocks barely change the residual stream; weights ten times larger
    make the difference show far above round-off.)"""
    torch.manual_seed(1)
    model = ActionValueModel(PRESETS["tiny"]).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if name.endswith(("qkv.weight", "proj.weight", "w2.weight", "head.weight")):
                weight.mul_(10)
    board = chess.Board(MIDDLEGAME)
    shared, _ = torch_log_probs(model, [board], "shared")
    per_move, _ = torch_log_probs(model, [board], "per_move")
    assert shared.shape == per_move.shape
    assert np.abs(shared - per_move).max() > 1e-2


def _variants() -> list:
    """Every combination of the declared flags (engine/model/architecture.FLAGS): a new variant
    declared there is covered here without another list."""
    names = list(FLAGS)
    combos = itertools.product(*(FLAGS[n] for n in names))
    return [
        pytest.param(
            dict(zip(names, c, strict=True)),
            id="-".join(f"{n}={v}" for n, v in zip(names, c, strict=True)),
        )
        for c in combos
    ]


@pytest.mark.parametrize("features", _variants())
@pytest.mark.parametrize("layout", ["shared", "per_move"])
def test_onnx_matches_pytorch(tmp_path, layout, features):
    torch.manual_seed(3)
    if features["features"] is None:
        features = {**features, "features": ALL_FACTS}
    config = dataclasses.replace(PRESETS["tiny"], **features)
    model = ActionValueModel(config).eval()
    randomise_fact_tables(model)
    path = tmp_path / f"{layout}.onnx"
    export_model(model, path, preset="tiny", layout=layout, trained=False)
    scorer = Scorer(path, threads=1)
    one_move = chess.Board("k7/8/8/8/8/8/6q1/7K w - - 0 1")  # Kxg2 is the only move
    white = [one_move, chess.Board(MIDDLEGAME), chess.Board(POSITION_218)]
    black = [board.mirror() for board in white]  # the same move counts, black to move
    cases = [[board] for board in white + black]
    # one batch, both colours, padded to its widest position (per_move: without the 218-move
    # ones, which it would pad every board to at five times the cost; checked alone above)
    batch = [chess.Board(), *white, *black]
    cases.append(batch if layout == "shared" else [b for b in batch if b.legal_moves.count() < 218])
    widths = []
    for boards in cases:
        expected, ids = torch_log_probs(model, boards, layout)
        actual = file_log_probs(scorer, boards)
        mask = ids >= 0
        np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4, rtol=0)
        widths.append(ids.shape[1])
    assert widths[0] == widths[3] == 1 and widths[2] == widths[5] == 218


def test_move_features_read_the_pieces_on_the_moves_squares():
    """The move token sees what stands on its squares: changing only the piece on e2 changes
    e2e4's input embedding (the id-only token is blind to it)."""
    torch.manual_seed(0)
    plain = dataclasses.replace(PRESETS["tiny"], features=())  # no facts: tokens alone
    model = ActionValueModel(plain).eval()
    e2e4 = torch.tensor([[317]])
    pawn = torch.from_numpy(tokenize(chess.Board())).unsqueeze(0)
    queen = torch.from_numpy(
        tokenize(chess.Board("rnbqkbnr/pppppppp/8/8/8/8/PPPPQPPP/RNB1KBNR w KQkq - 0 1"))
    ).unsqueeze(0)
    with torch.no_grad():
        assert not torch.allclose(model._moves(pawn, e2e4, None), model._moves(queen, e2e4, None))
        id_only = ActionValueModel(dataclasses.replace(plain, move_features=False))
        assert torch.equal(id_only._moves(pawn, e2e4, None), id_only._moves(queen, e2e4, None))


def test_format_1_files_still_load(tmp_path):
    """Files written before move features (format_version 1) load and score."""
    torch.manual_seed(1)
    model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], move_features=False)).eval()
    path = tmp_path / "v1.onnx"
    export_model(model, path, preset="tiny", trained=False)
    proto = onnx.load(str(path))
    for prop in proto.metadata_props:
        if prop.key == "oneply.format_version":
            prop.value = "1"
    onnx.save(proto, str(path))
    scorer = Scorer(path, threads=1)
    assert scorer.info.layout == "shared"
    expected, ids = torch_log_probs(model, [chess.Board()], "shared")
    np.testing.assert_allclose(file_log_probs(scorer, [chess.Board()]), expected, atol=1e-4)


def test_metadata_is_written_and_read(tmp_path, tiny_torch_model):
    path = tmp_path / "m.onnx"
    export_model(
        tiny_torch_model, path, preset="tiny", training={"steps": 5}, metrics={"puzzles": 0.5}
    )
    info = Scorer(path).info
    assert (info.layout, info.num_bins, info.preset, info.trained) == ("shared", 128, "tiny", True)
    assert info.training == {"steps": 5} and info.metrics == {"puzzles": 0.5}
    assert info.config["width"] == 32


def _rewrite_metadata(source, target, **changes):
    model = onnx.load(str(source))
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    onnx.save(model, str(target))


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("oneply.format_version", "99", "format version 99"),
        ("oneply.num_bins", "64", "K=64"),
        ("oneply.layout", "diagonal", "unknown layout"),
        ("oneply.config", "{not json", "malformed"),
    ],
)
def test_wrong_metadata_gets_an_error_naming_the_file(tmp_path, tiny_onnx, key, value, message):
    bad = tmp_path / "bad.onnx"
    _rewrite_metadata(tiny_onnx, bad, **{key: value})
    with pytest.raises(ModelFileError, match=message) as caught:
        Scorer(bad)
    assert str(bad) in str(caught.value)


def test_missing_and_garbage_model_files(tmp_path):
    with pytest.raises(ModelFileError, match="not found.*ONEPLY_MODEL"):
        Scorer(tmp_path / "nope.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\x01 definitely not a protobuf" * 10)
    with pytest.raises(ModelFileError, match="cannot load"):
        Scorer(garbage)


def test_env_var_selects_the_model(monkeypatch, tiny_onnx):
    monkeypatch.setenv("ONEPLY_MODEL", str(tiny_onnx))
    assert Scorer().info.preset == "tiny"


def test_int8_export_is_close_to_fp32(tmp_path, tiny_torch_model):
    fp32, int8 = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    export_model(tiny_torch_model, fp32, preset="tiny")
    export_model(tiny_torch_model, int8, preset="tiny", int8=True)
    quantized = Scorer(int8)
    assert quantized.info.quantization == "int8"
    assert any(
        n.op_type.startswith(("DynamicQuantize", "MatMulInteger"))
        for n in onnx.load(str(int8)).graph.node
    )
    board = chess.Board(MIDDLEGAME)
    a = {s.move: s.win for s in Scorer(fp32).score(board)}
    b = {s.move: s.win for s in quantized.score(board)}
    assert max(abs(a[m] - b[m]) for m in a) < 0.02


def test_score_many_equals_one_by_one(tiny_onnx):
    scorer = Scorer(tiny_onnx)
    boards = [chess.Board(), chess.Board(MIDDLEGAME), chess.Board(POSITION_218)]
    mate = chess.Board("7k/5QQ1/8/8/8/8/8/K7 b - - 0 1")
    assert mate.is_game_over()
    together = scorer.score_many([*boards, mate])
    assert together[-1] == []
    for board, batch in zip(boards, together[:-1], strict=True):
        alone = scorer.score(board)
        assert [s.move for s in alone] == [s.move for s in batch]
        assert np.allclose([s.win for s in alone], [s.win for s in batch], atol=1e-5)
        assert {s.move for s in alone} == set(board.legal_moves)
        assert all(a.win >= b.win for a, b in zip(alone, alone[1:], strict=False))


def test_export_cli_writes_metadata(tmp_path):
    from oneply.engine.cli import main

    out = tmp_path / "cli.onnx"
    assert main(["export", "--untrained", "tiny", "-o", str(out)]) == 0
    info = Scorer(out).info
    assert not info.trained and info.preset == "tiny"
    assert json.loads(json.dumps(info.config))["layers"] == 2


def test_the_declaration_is_what_both_sides_build(tmp_path) -> None:
    """The torch model and the graph hold exactly the declared weights; the builder refuses a
    missing, extra or misshapen tensor by name."""
    from oneply.engine.model.graph import build_model, weights_of
    from oneply.training.model.export import onnx_weights

    model = ActionValueModel(PRESETS["tiny"])
    declared = {p.name: p.shape for p in parameters(model.config.to_dict())}
    weights = onnx_weights(model)
    assert {n: w.shape for n, w in weights.items()} == declared
    path = tmp_path / "m.onnx"
    export_model(model, path, preset="tiny")
    assert set(weights_of(onnx.load(str(path)))) == set(declared)
    config = model.config.to_dict()
    broken = {k: v for k, v in weights.items() if k != "head.bias"}
    with pytest.raises(ValueError, match="missing head.bias"):
        build_model(broken, "shared", config)
    with pytest.raises(ValueError, match="unexpected extra"):
        build_model({**weights, "extra": weights["bos"]}, "shared", config)
    with pytest.raises(ValueError, match=r"bos: shape \(3,\)"):
        check_weights(config, {**{n: w.shape for n, w in weights.items()}, "bos": (3,)})

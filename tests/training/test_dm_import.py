"""`oneply import-dm`: DeepMind's checkpoints → oneply model files (training/model/dm_import.py).

The real weights cannot be downloaded here. tests/helpers/dm_reference.py builds a checkpoint with
exactly their structure (haiku parameter names and shapes, orbax on-disk layout) filled with
random values, and runs their architecture's forward pass in JAX; the imported file must give
the same win probabilities within 1e-4.
"""

from __future__ import annotations

import json
import shutil
import sys

import chess
import numpy as np
import onnx
import pytest

pytest.importorskip("jax")
pytest.importorskip("haiku")
pytest.importorskip("orbax.checkpoint")

from oneply.engine.cli import main  # noqa: E402
from oneply.engine.facts.moves import MOVES, legal_move_ids  # noqa: E402
from oneply.engine.facts.tokenizer import tokenize  # noqa: E402
from oneply.engine.model.values import bin_centres  # noqa: E402
from oneply.engine.play.inference import Scorer  # noqa: E402
from oneply.training.model.dm_import import (  # noqa: E402
    SIZES,
    DMImportError,
    check_shapes,
    expected_shapes,
    import_checkpoint,
    infer_predictor,
    infer_size,
    read_params,
)
from tests.conftest import POSITION_218  # noqa: E402
from tests.helpers import dm_reference as dm  # noqa: E402
from tests.helpers.model_helpers import children  # noqa: E402

ONE_MOVE = "k7/8/8/8/8/8/1q6/K7 w - - 0 1"
MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 3 8"
EN_PASSANT = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
PROMOTIONS = "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b Qk - 12 40"
POSITIONS = (ONE_MOVE, MIDDLEGAME, POSITION_218)
# After a failed restore (the truncated-checkpoint test) tensorstore reads still in flight report
# to orbax's closed event loop, which Python shows as an unraisable exception in a later test.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
NINE_M = SIZES["9M"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """checkpoints/9M/6400000/{params,params_ema} with random values, as their download has."""
    root = tmp_path_factory.mktemp("checkpoints")
    size = (NINE_M.layers, NINE_M.heads, NINE_M.width)
    params = dm.random_params(*size, seed=1)
    ema = dm.random_params(*size, seed=2)
    dm.save_checkpoint(root / "9M", params, ema)
    return root, params, ema


@pytest.fixture(scope="module")
def imported(checkpoints, tmp_path_factory):
    root, _, _ = checkpoints
    path = tmp_path_factory.mktemp("models") / "dm-9m.onnx"
    import_checkpoint(root / "9M", path)
    return path


def test_position_set_has_1_about_30_and_218_legal_moves():
    counts = [chess.Board(fen).legal_moves.count() for fen in POSITIONS]
    assert counts[0] == 1 and 25 <= counts[1] <= 40 and counts[2] == 218


@pytest.mark.parametrize("fen", (*POSITIONS, EN_PASSANT, PROMOTIONS, chess.STARTING_FEN))
def test_their_tokenizer_and_action_ids_agree_with_ours(fen):
    board = chess.Board(fen)
    assert np.array_equal(dm.dm_tokenize(board.fen()), tokenize(board))
    theirs = {m: i for i, m in enumerate(dm.dm_actions())}
    ours = legal_move_ids(board)
    assert list(ours) == [theirs[m.uci()] for m in board.legal_moves]


def test_their_action_vocabulary_and_buckets_are_ours():
    assert tuple(dm.dm_actions()) == MOVES
    assert np.allclose(dm.bucket_values(), bin_centres(128), atol=1e-15)


@pytest.mark.parametrize("name", list(SIZES))
def test_every_published_size_maps_parameter_for_parameter(name):
    """Their haiku model of each size (shapes only, no memory) is what the importer expects."""
    size = SIZES[name]
    shapes = dm.param_shapes(size.layers, size.heads, size.width)
    assert shapes == expected_shapes(size)
    assert infer_size(shapes, folder=name) == name
    check_shapes(shapes, size)


@pytest.mark.parametrize("fen", (ONE_MOVE, MIDDLEGAME, PROMOTIONS))
def test_imported_wins_equal_their_forward_pass(checkpoints, imported, fen):
    """One move, a middlegame, black to move with promotions. (Not the 218-move position: at
    9M parameters per_move runs the network once a move, ~12 s in JAX and onnxruntime here; the
    per_move graph on the widest position is tests/engine/test_model.py's, on a tiny model.)"""
    _, params, _ = checkpoints
    board = chess.Board(fen)
    expected = dm.reference_wins(params, NINE_M.layers, NINE_M.heads, NINE_M.width, board)
    got = {s.move.uci(): s.win for s in Scorer(imported, threads=2).score(board)}
    assert got.keys() == expected.keys()
    error = max(abs(got[m] - expected[m]) for m in expected)
    assert error < 1e-4, f"max |Δ win| {error:.2e}"
    if len(expected) > 1:  # the check means something only if moves get different values
        assert np.std(list(expected.values())) > 1e-3


def test_imported_metadata_names_the_source(imported, checkpoints):
    info = Scorer(imported, threads=1).info
    assert (info.layout, info.preset, info.num_bins) == ("per_move", "dm-9m", 128)
    assert info.trained and info.quantization == "fp32"
    assert (info.config["layers"], info.config["heads"], info.config["width"]) == (8, 8, 256)
    assert info.source["model"] == "9M" and info.source["step"] == dm.STEP
    assert info.source["params"] == "params"
    assert info.source["repository"] == "google-deepmind/searchless_chess"
    assert info.source["checkpoint"].endswith("9M/6400000/params")


def test_ema_and_int8_through_the_command_line(checkpoints, tmp_path, capsys):
    root, _, ema = checkpoints
    out = tmp_path / "ema-int8.onnx"
    args = ["import-dm", str(root / "9M" / str(dm.STEP)), "-o", str(out), "--ema", "--int8"]
    assert main(args) == 0
    assert "dm-9m, per_move, int8, trained" in capsys.readouterr().out
    props = {p.key: p.value for p in onnx.load(str(out), load_external_data=False).metadata_props}
    assert json.loads(props["oneply.source"])["params"] == "params_ema"
    board = chess.Board(MIDDLEGAME)
    expected = dm.reference_wins(ema, NINE_M.layers, NINE_M.heads, NINE_M.width, board)
    got = {s.move.uci(): s.win for s in Scorer(out, threads=2).score(board)}
    error = max(abs(got[m] - expected[m]) for m in expected)
    assert error < 0.02, f"int8 max |Δ win| {error:.3f}"


# --- error paths ------------------------------------------------------------------------------


def _fails(capsys, *args: str) -> str:
    assert main(["import-dm", *args]) == 1
    return capsys.readouterr().err


def test_missing_and_empty_folders_say_how_to_download(tmp_path, capsys):
    message = _fails(capsys, str(tmp_path / "nope"), "-o", str(tmp_path / "x.onnx"))
    assert "does not exist" in message and "download.sh" in message
    (tmp_path / "9M").mkdir()
    message = _fails(capsys, str(tmp_path / "9M"), "-o", str(tmp_path / "x.onnx"))
    assert "no checkpoint in" in message and "6400000/params" in message
    assert not (tmp_path / "x.onnx").exists()


def test_wrong_step_and_missing_params(checkpoints, tmp_path, capsys):
    root, _, _ = checkpoints
    message = _fails(capsys, str(root / "9M"), "-o", str(tmp_path / "x.onnx"), "--step", "5")
    assert "step 5 not in" in message and "6400000" in message
    (tmp_path / "m" / "7").mkdir(parents=True)
    message = _fails(capsys, str(tmp_path / "m"), "-o", str(tmp_path / "x.onnx"))
    assert "has no 'params' folder" in message


def test_size_that_disagrees_with_the_shapes(checkpoints, tmp_path, capsys):
    root, _, _ = checkpoints
    message = _fails(capsys, str(root / "9M"), "-o", str(tmp_path / "x.onnx"), "--size", "270M")
    assert "--size says 270M" in message and "those of 9M" in message


def test_unknown_size_is_refused(tmp_path, capsys):
    """Their 'local' training config (4 layers, width 64) is not a published size."""
    params = dm.random_params(4, 4, 64, seed=3)
    dm.save_checkpoint(tmp_path / "local", params, params)
    message = _fails(capsys, str(tmp_path / "local"), "-o", str(tmp_path / "x.onnx"))
    assert "unknown size" in message and "4 layers of width 64" in message
    with pytest.raises(DMImportError, match="unknown size '1B'"):
        infer_size(expected_shapes(NINE_M), requested="1B")


def test_wrong_shapes_are_listed():
    shapes = expected_shapes(NINE_M)
    shapes["linear_2/w"] = (256, 1024)  # an MLP output the wrong way round
    shapes["multi_head_dot_product_attention/layer_norm/scale"] = (32,)  # QK-LayerNorm
    del shapes["layer_norm_16/offset"]  # no final LayerNorm offset
    with pytest.raises(DMImportError) as error:
        check_shapes(shapes, NINE_M)
    text = str(error.value)
    assert "linear_2/w has shape (256, 1024), expected (1024, 256)" in text
    assert "unexpected multi_head_dot_product_attention/layer_norm/scale" in text
    assert "missing layer_norm_16/offset" in text


def test_the_policy_comes_from_the_folder_and_the_head_and_contradictions_are_refused():
    value, policy = expected_shapes(NINE_M), expected_shapes(NINE_M, predictor="bc")
    assert policy["linear_24/w"] == (256, 1968) and policy["linear_24/b"] == (1968,)
    assert infer_predictor(value, NINE_M, "9M") == "av"
    assert infer_predictor(value, NINE_M, "9M_state_value") == "sv"
    assert infer_predictor(value, NINE_M, "x", requested="sv") == "sv"
    assert infer_predictor(policy, NINE_M, "9M_behavioral_cloning") == "bc"
    assert infer_predictor(policy, NINE_M, "anything") == "bc"  # the head says so
    with pytest.raises(DMImportError, match="behavioural-cloning model, but --predictor"):
        infer_predictor(policy, NINE_M, "9M", requested="av")
    with pytest.raises(DMImportError, match="the head has 128 outputs"):
        infer_predictor(value, NINE_M, "9M", requested="bc")
    with pytest.raises(DMImportError, match="holds state_value weights"):
        infer_predictor(value, NINE_M, "9M_state_value", requested="av")
    with pytest.raises(DMImportError, match="behavioral-cloning transformer"):
        check_shapes(value, NINE_M, "bc")


@pytest.mark.parametrize("files", ("ocdbt.process_0/d/*", "d/*"))
def test_truncated_checkpoint_fails_with_a_message(checkpoints, tmp_path, capsys, files):
    """Array data cut short (restore fails), or the tree's metadata too (shapes unreadable)."""
    root, _, _ = checkpoints
    broken = tmp_path / "9M"
    shutil.copytree(root / "9M", broken)
    for data in (broken / str(dm.STEP) / "params").rglob(files):
        data.write_bytes(data.read_bytes()[:10])
    message = _fails(capsys, str(broken), "-o", str(tmp_path / "x.onnx"))
    assert "cannot read the orbax checkpoint" in message and "Unzip it again" in message


def test_bench_times_an_imported_file_in_fp32_and_int8(imported, capsys):
    """`oneply bench` on a per_move file: the file and its int8 copy (no shared rebuild); no
    search row (a 200-node search of the 9M file took minutes; tests/engine/test_cli_tools.py
    checks that row on a tiny file)."""
    args = ["bench", "--model", str(imported), "--positions", "2", "--search-nodes", "0"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["search"] is None
    assert set(data["ms_per_position"]) == {"per_move_fp32", "per_move_int8"}
    assert "speedup_shared_int8_vs_per_move" not in data
    assert 0 <= data["int8_abs_win_delta"]["max"] < 0.05


def test_bfloat16_parameters_are_read_and_integers_refused(tmp_path):
    """A checkpoint saved in bfloat16 is floating point (numpy calls its kind "V")."""
    import jax.numpy as jnp

    params = dm.random_params(4, 4, 64, seed=4)
    half = {m: {n: v.astype(jnp.bfloat16) for n, v in ps.items()} for m, ps in params.items()}
    read = read_params(dm.save_checkpoint(tmp_path / "bf16", half, half))
    assert read["embed/embeddings"].dtype.name == "bfloat16"
    ints = {m: {n: v.astype(jnp.int32) for n, v in ps.items()} for m, ps in params.items()}
    with pytest.raises(DMImportError, match="not floating point"):
        read_params(dm.save_checkpoint(tmp_path / "int", ints, ints))


def test_without_orbax_the_message_names_the_extra(checkpoints, tmp_path, monkeypatch):
    root, _, _ = checkpoints
    monkeypatch.setitem(sys.modules, "orbax.checkpoint", None)  # as if not installed
    with pytest.raises(DMImportError, match=r"pip install 'oneply\[dm\]'"):
        import_checkpoint(root / "9M", tmp_path / "x.onnx")


# --- state value and behavioural cloning ------------------------------------------------------


@pytest.fixture(scope="module")
def other_policies(tmp_path_factory):
    """checkpoints/9M_state_value and 9M_behavioral_cloning, as their download names them,
    imported; with the parameters the reference runs."""
    root = tmp_path_factory.mktemp("policies")
    models = tmp_path_factory.mktemp("models")
    size = (NINE_M.layers, NINE_M.heads, NINE_M.width)
    out: dict = {"root": root}
    for folder, predictor, outputs in (
        ("9M_state_value", "sv", dm.NUM_BUCKETS),
        ("9M_behavioral_cloning", "bc", dm.NUM_ACTIONS),
    ):
        params = dm.random_params(*size, seed=5, outputs=outputs)
        dm.save_checkpoint(root / folder, params, params)
        path = models / f"dm-9m-{predictor}.onnx"
        import_checkpoint(root / folder, path)
        out[predictor] = (path, params)
    return out


def test_their_state_value_and_policy_trees_are_what_the_importer_expects():
    size = (NINE_M.layers, NINE_M.heads, NINE_M.width)
    assert dm.param_shapes(*size) == expected_shapes(NINE_M, predictor="sv")
    assert dm.param_shapes(*size, dm.NUM_ACTIONS) == expected_shapes(NINE_M, predictor="bc")


@pytest.mark.parametrize("fen", (MIDDLEGAME, PROMOTIONS))
def test_imported_state_value_equals_their_forward_pass(other_policies, fen):
    """Each move scores 1 − their value of the position after it (their engine's rule)."""
    path, params = other_policies["sv"]
    board = chess.Board(fen)
    after = children(board)
    values = dm.reference_state_values(params, NINE_M.layers, NINE_M.heads, NINE_M.width, after)
    expected = {m.uci(): 1.0 - v for m, v in zip(board.legal_moves, values, strict=True)}
    scorer = Scorer(path, threads=2)
    got = {s.move.uci(): s.win for s in scorer.score(board)}
    assert got.keys() == expected.keys()
    error = max(abs(got[m] - expected[m]) for m in expected)
    assert error < 1e-4, f"max |Δ win| {error:.2e}"
    assert np.std(list(expected.values())) > 1e-3
    info = scorer.info
    assert (info.predictor, info.preset, info.layout) == ("sv", "dm-9m-sv", "shared")
    assert info.source["policy"] == "state_value"
    assert info.source["checkpoint"].endswith("9M_state_value/6400000/params")


@pytest.mark.parametrize("fen", (MIDDLEGAME, POSITION_218, PROMOTIONS))
def test_imported_policy_equals_their_forward_pass(other_policies, fen):
    path, params = other_policies["bc"]
    board = chess.Board(fen)
    expected = dm.reference_policy(params, NINE_M.layers, NINE_M.heads, NINE_M.width, board)
    scorer = Scorer(path, threads=2)
    got = {s.move.uci(): s.win for s in scorer.score(board)}
    assert got.keys() == expected.keys()
    error = max(abs(got[m] - expected[m]) for m in expected)
    assert error < 1e-5, f"max |Δ p| {error:.2e}"
    assert max(expected, key=expected.get) == scorer.score(board)[0].move.uci()
    assert (scorer.info.predictor, scorer.info.preset) == ("bc", "dm-9m-bc")
    assert scorer.info.source["policy"] == "behavioral_cloning"


def test_a_predictor_named_on_the_command_line_must_fit_the_checkpoint(
    other_policies, tmp_path, capsys
):
    folder = other_policies["root"] / "9M_behavioral_cloning"
    message = _fails(capsys, str(folder), "-o", str(tmp_path / "x.onnx"), "--predictor", "av")
    assert "--predictor av" in message and "holds behavioral_cloning weights" in message
    assert not (tmp_path / "x.onnx").exists()

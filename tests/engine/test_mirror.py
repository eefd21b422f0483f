"""The side-to-move view (config ``mirror``): its tables agree with python-chess, a mirror model
scores a black position exactly like its colour-flipped white twin, and the flag survives the
model file, warm start and bench's rebuild."""

from __future__ import annotations

import dataclasses
import json
import random

import chess
import numpy as np
import onnx
import pytest

from oneply.engine.facts.moves import MOVES, NUM_MOVES
from oneply.engine.facts.tokenizer import tokenize
from oneply.engine.model.mirror import MIRROR_MOVE, flip_state
from oneply.engine.play.inference import Scorer
from tests.conftest import POSITION_218
from tests.helpers.model_helpers import file_log_probs, scores_by_move, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.engine.model.graph import build_model, weights_of  # noqa: E402
from oneply.engine.play.bench import build_variants  # noqa: E402
from oneply.training.fit.warm_start import load_init, load_weights  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402

#: every preset has the view since v4; the format-3 model of its tests reads no facts
MIRROR = dataclasses.replace(PRESETS["tiny"], features=())
PLAIN = dataclasses.replace(MIRROR, mirror=False)
#: black to move, with what the flip must get right: castling rights of one kind per side
#: (Kq → Qk), an en-passant square, promotions with capture, castling moves, 218 moves
BLACK_POSITIONS = [
    "r3k2r/8/8/8/4Pp2/8/8/R3K2R b Kq e3 0 1",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R b KQ - 3 8",
    "4k3/8/8/8/8/8/1p6/R3K3 b Q - 0 1",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 4 8",
    chess.Board(POSITION_218).mirror().fen(),
]


def random_positions(count: int, seed: int = 5) -> list[chess.Board]:
    """Positions of seeded random games: both sides to move, en passant and lost rights."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 80 and len(boards) < count:
            board.push(rng.choice(list(board.legal_moves)))
            boards.append(board.copy(stack=False))
    return boards


def castling_positions() -> list[chess.Board]:
    """All 16 castling-rights sets, each with either side to move."""
    boards = []
    for code in range(16):
        rights = "".join(c for i, c in enumerate("KQkq") if code >> i & 1) or "-"
        for side in "wb":
            boards.append(
                chess.Board(f"r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R {side} {rights} - 0 1")
            )
    return boards


def test_every_move_mirrors_to_its_rank_flipped_twin():
    for index, uci in enumerate(MOVES):
        move = chess.Move.from_uci(uci)
        twin = chess.Move(
            chess.square_mirror(move.from_square),
            chess.square_mirror(move.to_square),
            move.promotion,
        )
        assert MOVES[MIRROR_MOVE[index]] == twin.uci()
    assert np.array_equal(MIRROR_MOVE[MIRROR_MOVE], np.arange(NUM_MOVES))


def test_flip_state_is_python_chess_board_mirror_and_an_involution():
    boards = random_positions(400) + castling_positions()
    boards += [chess.Board(fen) for fen in BLACK_POSITIONS]
    assert any(board.ep_square for board in boards if board.turn == chess.WHITE)
    assert any(board.ep_square for board in boards if board.turn == chess.BLACK)
    states = np.stack([tokenize(board) for board in boards])
    flipped = flip_state(states)
    assert np.array_equal(flipped, np.stack([tokenize(board.mirror()) for board in boards]))
    assert np.array_equal(flip_state(flipped), states)


@pytest.mark.parametrize("layout", ["shared", "per_move"])
def test_a_mirror_model_scores_a_position_and_its_colour_flipped_twin_alike(tmp_path, layout):
    torch.manual_seed(4)
    mirror = ActionValueModel(MIRROR).eval()
    plain = ActionValueModel(PLAIN).eval()
    plain.load_state_dict(mirror.state_dict())  # same weights; the flip has none
    path = tmp_path / "mirror.onnx"
    export_model(mirror, path, preset="tiny", layout=layout, trained=False)
    scorer = Scorer(path, threads=1)
    for fen in BLACK_POSITIONS:
        black = chess.Board(fen)
        twin = black.mirror()
        for model in (mirror, scorer):
            a, b = scores_by_move(model, black, layout), scores_by_move(model, twin, layout)
            assert a.keys() == b.keys()
            for move in a:
                np.testing.assert_allclose(a[move], b[move], atol=1e-5, rtol=0, err_msg=move)
        a, b = scores_by_move(plain, black, layout), scores_by_move(plain, twin, layout)
        assert max(np.abs(a[m] - b[m]).max() for m in a) > 1e-3  # the plain model sees colours
        # white to move is left alone: the same weights give the same values
        same = scores_by_move(mirror, twin, layout)
        assert all(np.array_equal(b[m], same[m]) for m in b)


def test_the_flag_survives_the_model_file_and_warm_start(tmp_path):
    torch.manual_seed(6)
    model = ActionValueModel(MIRROR).eval()
    path, plain_path = tmp_path / "mirror.onnx", tmp_path / "plain.onnx"
    export_model(model, path, preset="tiny", trained=False)
    export_model(ActionValueModel(PLAIN), plain_path, preset="tiny", trained=False)
    versions = {
        p: {m.key: m.value for m in onnx.load(str(p)).metadata_props}["oneply.format_version"]
        for p in (path, plain_path)
    }
    assert versions == {path: "3", plain_path: "2"}  # older readers keep reading plain files
    scorer = Scorer(path, threads=1)
    assert scorer.info.config["mirror"] is True
    source = load_init(path)
    assert source.config == MIRROR
    warm = ActionValueModel(source.config).eval()
    load_weights(warm, source)
    boards = [chess.Board(fen) for fen in BLACK_POSITIONS] + [chess.Board()]
    actual, ids = torch_log_probs(warm, boards)
    mask = ids >= 0
    expected = file_log_probs(scorer, boards)
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-5, rtol=0)


def test_bench_rebuilds_a_mirror_model_with_the_flip(tmp_path):
    """bench derives a per_move graph from a shipped file's weights: it must keep the flip
    (which lives in the metadata, not the weights), and build_model refuses to drop it."""
    torch.manual_seed(8)
    model = ActionValueModel(MIRROR).eval()
    path = tmp_path / "mirror.onnx"
    export_model(model, path, preset="tiny", trained=False)
    per_move = Scorer(build_variants(path, tmp_path)["per_move_fp32"], threads=1)
    boards = [chess.Board(fen) for fen in BLACK_POSITIONS]
    expected, ids = torch_log_probs(model, boards, "per_move")
    mask = ids >= 0
    np.testing.assert_allclose(file_log_probs(per_move, boards)[mask], expected[mask], atol=1e-4)
    proto = onnx.load(str(path))
    props = {p.key: p.value for p in proto.metadata_props}
    assert json.loads(props["oneply.config"])["mirror"] is True
    with pytest.raises(ValueError, match="mirror"):
        build_model(weights_of(proto), "per_move", PLAIN.to_dict(), props)

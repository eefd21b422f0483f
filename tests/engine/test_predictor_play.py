"""Playing with sv and bc model files (issue 22): the Scorer's rule for each predictor
(engine/play/inference.py), and `oneply uci` / `oneply analyse` on such files."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from oneply.engine.model.values import expected_win
from oneply.engine.play.inference import Scorer, encode_batch, encode_states
from tests.helpers.model_helpers import children
from tests.helpers.model_helpers import predictor_model as model_of

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 3 8"
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#

torch = pytest.importorskip("torch")

from oneply.training.model.export import export_model  # noqa: E402


def test_sv_plays_the_move_that_leaves_the_opponent_worst_off(tmp_path):
    model = model_of("sv")
    path = tmp_path / "sv.onnx"
    export_model(model, path, preset="tiny", trained=False)
    scorer = Scorer(path, threads=1)
    board = chess.Board(MIDDLEGAME)
    scores = scorer.score(board)
    encoded = encode_states(children(board), facts=True)
    states, squares = torch.from_numpy(encoded.states), torch.from_numpy(encoded.square_facts)
    with torch.no_grad():
        values = expected_win(model(states, None, "shared", squares).numpy())
    want = {m: 1.0 - v for m, v in zip(board.legal_moves, values, strict=True)}
    assert [s.move for s in scores] == sorted(want, key=lambda m: -want[m])
    for s in scores:
        assert s.win == pytest.approx(want[s.move], abs=1e-5)
    mate = scorer.score(chess.Board(MATE_IN_ONE))
    assert mate[0].move.uci() == "a1a8" and mate[0].win == 1.0
    stalemate = scorer.score(chess.Board("7k/8/5Q2/8/8/8/8/6K1 w - - 0 1"))
    assert {s.move.uci(): s.win for s in stalemate}["f6f7"] == 0.5
    both = scorer.score_many(
        [board, chess.Board(MATE_IN_ONE), chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")]
    )
    assert [s.move for s in both[0]] == [s.move for s in scores] and both[2] == []


def test_bc_plays_the_policys_argmax(tmp_path):
    model = model_of("bc")
    path = tmp_path / "bc.onnx"
    export_model(model, path, preset="tiny", trained=False)
    scorer = Scorer(path, threads=1)
    board = chess.Board(MIDDLEGAME).mirror()
    scores = scorer.score(board)
    encoded = encode_batch([board], facts=True, move_facts=False)
    tensors = [torch.from_numpy(a) for a in encoded.arrays()]
    with torch.no_grad():
        policy = model(tensors[0], tensors[1], "shared", tensors[2])[0].exp().numpy()
    assert scores[0].move == encoded.moves[0][int(policy.argmax())]
    assert sum(s.win for s in scores) == pytest.approx(1.0, abs=1e-5)


def _export(tmp_path, predictor: str):
    path = tmp_path / f"{predictor}.onnx"
    export_model(model_of(predictor), path, preset="tiny", trained=False)
    return path


def test_sv_and_bc_files_play_a_legal_game_through_oneply_uci(tmp_path):
    """python-chess's UCI client drives two `oneply uci` processes, an sv file against a bc
    file; python-chess checks every bestmove is legal."""
    import chess.engine

    from tests.conftest import REPO
    from tests.helpers.uci import UCI_CMD

    players = {
        chess.WHITE: chess.engine.SimpleEngine.popen_uci(
            [*UCI_CMD, "--model", str(_export(tmp_path, "sv"))], cwd=REPO
        ),
        chess.BLACK: chess.engine.SimpleEngine.popen_uci(
            [*UCI_CMD, "--model", str(_export(tmp_path, "bc"))], cwd=REPO
        ),
    }
    try:
        board = chess.Board()
        while not board.is_game_over(claim_draw=True) and board.ply() < 60:
            engine = players[board.turn]
            result = engine.play(board, chess.engine.Limit(time=0.2), info=chess.engine.INFO_SCORE)
            assert result.move in board.legal_moves
            board.push(result.move)
        assert board.ply() >= 20 or board.is_game_over(claim_draw=True)
        with_multipv = players[chess.WHITE].analyse(board, chess.engine.Limit(time=0.2), multipv=3)
        assert 1 <= len(with_multipv) <= 3
    finally:
        for engine in players.values():
            engine.quit()


@pytest.mark.parametrize("predictor", ["sv", "bc"])
def test_analyse_shows_every_legal_move_of_sv_and_bc_files(tmp_path, predictor):
    import subprocess

    from tests.conftest import ENGINE_CMD, REPO

    path = _export(tmp_path, predictor)
    done = subprocess.run(
        [*ENGINE_CMD, "analyse", "--model", str(path), "--json", "--threads", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert predictor in report["model_description"]
    assert len(report["moves"]) == 20


def _search_50_nodes(model: Path) -> list[str]:
    """`oneply uci --model MODEL` with Search on, asked for 50 nodes from the start: its lines
    up to its bestmove."""
    from tests.helpers.uci import RawEngine

    engine = RawEngine("--model", str(model))
    try:
        engine.send("setoption name Search value true")
        engine.send("position startpos")
        engine.send("go nodes 50")
        return engine.read_until("bestmove", timeout=60)
    finally:
        engine.close()


def test_uci_search_on_a_bc_file_says_so_and_plays_the_policy(tmp_path):
    """Option Search on a bc file: an `info string` says look-ahead means nothing for move
    probabilities, no searching `info` lines come, and a legal move is played; an sv
    file searches as asked."""
    lines = _search_50_nodes(_export(tmp_path, "bc"))
    said = [line for line in lines if line.startswith("info string Search ignored")]
    assert len(said) == 1 and "bc" in said[0] and "without search" in said[0]
    assert any(" multipv 1 " in line for line in lines)  # the one pass's lines
    assert not any(line.startswith("info depth") and " nodes 50 " in line for line in lines)
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves

    lines = _search_50_nodes(_export(tmp_path, "sv"))
    assert not any("Search ignored" in line for line in lines)
    assert any(line.startswith("info depth") and " nodes 50 " in line for line in lines)


def test_analyse_labels_bc_scores_as_policy_and_refuses_search(tmp_path):
    import subprocess

    from tests.conftest import ENGINE_CMD, REPO

    path = _export(tmp_path, "bc")
    base = [*ENGINE_CMD, "analyse", "--model", str(path), "--threads", "1", "--search", "8"]
    table = subprocess.run(base, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    assert "--search ignored" in table.stderr and "bc" in table.stderr
    header = next(line for line in table.stdout.splitlines() if "move" in line and "san" in line)
    assert "policy %" in header and "win %" not in header and "cp" not in header.split()
    assert "search    " not in table.stdout
    done = subprocess.run([*base, "--json"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == "policy" and "search" not in report
    assert all(m["cp"] is None for m in report["moves"])
    assert sum(m["win"] for m in report["moves"]) == pytest.approx(1.0, abs=1e-3)

    sv = subprocess.run(
        [*ENGINE_CMD, "analyse", "--model", str(_export(tmp_path, "sv")), "--threads", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sv.returncode == 0, sv.stderr
    assert "win %" in sv.stdout and "policy %" not in sv.stdout

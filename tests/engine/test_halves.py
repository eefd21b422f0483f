"""engine/play/halves.py: a model that reads move facts, run as its state half beside the move
facts, scores as its one graph does (real onnxruntime sessions, real files)."""

from __future__ import annotations

import dataclasses
import threading

import chess
import numpy as np
import onnx
import pytest

from oneply.engine.facts import native
from oneply.engine.model.graph import quantize_int8
from oneply.engine.model.model_file import BUNDLED_MODEL, REFERENCE_MODEL
from oneply.engine.play.halves import MOVE_INPUTS, SplitError, split
from oneply.engine.play.inference import Scorer
from tests.conftest import POSITION_218

POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 4 4",  # black to move
    "8/P5k1/8/8/8/8/6Kp/8 w - - 0 1",  # promotions for both sides
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1",
    POSITION_218,
]
MATED = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"


def _wins(scorer: Scorer, boards: list[chess.Board]) -> list[dict[chess.Move, float]]:
    return [{s.move: s.win for s in scores} for scores in scorer.score_many(boards)]


def _assert_same(a: list[dict], b: list[dict], tolerance: float) -> None:
    for left, right in zip(a, b, strict=True):
        assert left.keys() == right.keys()
        assert max((abs(left[m] - right[m]) for m in left), default=0.0) <= tolerance


@pytest.fixture(scope="module")
def bundled() -> tuple[Scorer, Scorer]:
    """The bundled model (18 facts, mirror) overlapped on two threads, and run whole."""
    return Scorer(REFERENCE_MODEL, threads=2, overlap=True), Scorer(
        REFERENCE_MODEL, threads=2, overlap=False
    )


def test_the_bundled_model_runs_overlapped_and_scores_as_its_one_graph(bundled):
    overlapped, whole = bundled
    assert overlapped.overlapped and not whole.overlapped
    boards = [chess.Board(fen) for fen in POSITIONS]
    for board in boards:  # one position a call, as the UCI engine asks
        _assert_same(_wins(overlapped, [board]), _wins(whole, [board]), 1e-5)
    _assert_same(_wins(overlapped, boards), _wins(whole, boards), 1e-5)  # a padded batch


def test_a_position_without_moves_in_the_batch_scores_empty(bundled):
    overlapped, whole = bundled
    boards = [chess.Board(MATED), chess.Board()]
    got = overlapped.score_many(boards)
    assert got[0] == [] and len(got[1]) == 20
    assert overlapped.score_many([chess.Board(MATED)]) == [[]]
    assert overlapped.score_many([]) == []
    _assert_same(_wins(overlapped, boards), _wins(whole, boards), 1e-5)


def test_threads_calling_one_scorer_at_once_each_get_their_own_scores(bundled):
    """The bot's games and the search may share one Scorer: the one state-half worker queues
    their calls, and each call gets the halves of its own position."""
    overlapped, whole = bundled
    boards = [chess.Board(fen) for fen in POSITIONS]
    expected = [_wins(whole, [board])[0] for board in boards]
    failures: list[str] = []

    def play(offset: int) -> None:
        own = [board.copy() for board in boards]  # the facts push and pop moves on a board
        for turn in range(3 * len(boards)):
            index = (offset + turn) % len(boards)
            got = _wins(overlapped, [own[index]])
            try:
                _assert_same(got, [expected[index]], 1e-5)
            except AssertionError:
                failures.append(POSITIONS[index])

    threads = [threading.Thread(target=play, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_an_int8_file_splits_too(tmp_path, bundled):
    """The cut is read off the graph, so a quantized file (DynamicQuantizeMatMul nodes) splits
    as well; onnxruntime may fuse its ops a little differently on either side of the cut."""
    quantize_int8(REFERENCE_MODEL, tmp_path / "int8.onnx")
    overlapped = Scorer(tmp_path / "int8.onnx", threads=2, overlap=True)
    whole = Scorer(tmp_path / "int8.onnx", threads=2, overlap=False)
    assert overlapped.overlapped
    boards = [chess.Board(fen) for fen in POSITIONS]
    for board in boards:
        _assert_same(_wins(overlapped, [board]), _wins(whole, [board]), 2e-3)
        assert overlapped.score(board)[0].move == whole.score(board)[0].move


def test_the_cut_gives_the_move_half_everything_of_the_state_half_it_reads():
    model = onnx.load(str(REFERENCE_MODEL))
    halves = split(model)
    state_reads = {name for node in halves.state.graph.node for name in node.input}
    assert not state_reads & MOVE_INPUTS
    assert {value.name for value in halves.state.graph.input} == {"state", "square_facts"}
    assert [value.name for value in halves.state.graph.output] == list(halves.crossing)
    made = {name for node in halves.moves.graph.node for name in node.output}
    inputs = {value.name for value in halves.moves.graph.input}
    initializers = {init.name for init in halves.moves.graph.initializer}
    for node in halves.moves.graph.node:  # every tensor read is made, fed or stored there
        assert set(node.input) - {""} <= made | inputs | set(halves.crossing) | initializers
    # each layer's keys and values of the state tokens cross, and little else
    layers = json_config(model)["layers"]
    assert 2 * layers <= len(halves.crossing) <= 2 * layers + 4
    assert len(halves.state.graph.node) + len(halves.moves.graph.node) <= len(model.graph.node)


def json_config(model: onnx.ModelProto) -> dict:
    import json

    props = {p.key: p.value for p in model.metadata_props}
    return json.loads(props["oneply.config"])


def test_one_thread_or_no_move_facts_runs_the_one_graph(tmp_path, tiny_onnx):
    assert not Scorer(BUNDLED_MODEL, threads=1, overlap=True).overlapped  # nothing beside it
    assert Scorer(tiny_onnx, threads=2, overlap=True).overlapped  # every preset reads the facts
    torch = pytest.importorskip("torch")
    from oneply.training.model.export import export_model
    from oneply.training.model.model import PRESETS, ActionValueModel

    torch.manual_seed(2)
    plain = ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=())).eval()
    path = tmp_path / "plain.onnx"
    export_model(plain, path, preset="tiny", trained=False)
    assert not Scorer(path, threads=2, overlap=True).overlapped
    with pytest.raises(SplitError, match="move facts"):
        split(onnx.load(str(path)))
    assert np.isfinite([s.win for s in Scorer(path, threads=2).score(chess.Board())]).all()


def test_the_halves_run_by_default_only_on_the_python_path(tiny_onnx):
    """With the compiled core the facts are too quick to hide anything behind: one graph."""
    assert Scorer(tiny_onnx, threads=2).overlapped == (not native.available())
    with native.python_path():
        assert Scorer(tiny_onnx, threads=2).overlapped

"""`oneply train generate --labels best` (issue 22's cheap labels) with the real Stockfish:
best-only shards hold exactly what `StockfishScorer.score_best` says, the trainer's sv and bc
targets read them exactly, sv and bc train on them, av refuses them, and a directory keeps
one kind of label."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from oneply.engine.errors import CommandError  # noqa: E402
from oneply.engine.facts.tokenizer import tokenize  # noqa: E402
from oneply.training.data import inspect_data  # noqa: E402
from oneply.training.data.best_games import MISTAKE_CAP, mistake_probability  # noqa: E402
from oneply.training.data.compact import UNSCORED, fen_of_tokens  # noqa: E402
from oneply.training.data.dataset import AnnotatedDataset, Shard, find_shards  # noqa: E402
from oneply.training.data.shard_publish import write_compact_shard  # noqa: E402
from oneply.training.data.shard_writer import SourceError  # noqa: E402
from oneply.training.data.stockfish_scorer import StockfishScorer  # noqa: E402
from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.batches import collate  # noqa: E402
from oneply.training.fit.config import METRICS  # noqa: E402
from oneply.training.fit.targets import best_slots, position_values  # noqa: E402
from tests.conftest import stockfish_path  # noqa: E402
from tests.helpers.training import config, make_shard, run_generate  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BEST = ("--labels", "best")


@pytest.fixture(scope="module")
def best_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small best-only directory at depth 1 (shared: generating is the slow part)."""
    out = tmp_path_factory.mktemp("best") / "d"
    assert run_generate(out, 160, "--workers", "1", *BEST)["new"] == 160
    return out


def _rows(out: Path) -> list[tuple[str, np.ndarray]]:
    """(FEN, values) of every stored position, shards opened with their checksums."""
    rows = []
    for path in find_shards(out):
        shard = Shard(path, verify=True)
        assert shard.meta["labels"] == "best" and shard.labels == "best"
        for state, moves, wins in shard:
            assert len(moves) == len(wins) == chess.Board(fen_of_tokens(state)).legal_moves.count()
            rows.append((fen_of_tokens(state), wins))
    return rows


def test_best_only_shards_hold_what_score_best_says(best_dir: Path) -> None:
    manifest = json.loads((best_dir / "manifest.json").read_text())
    assert manifest["settings"]["labels"] == "best" and manifest["positions"] == 160
    rows = _rows(best_dir)
    assert len(rows) == 160
    with StockfishScorer(stockfish_path()) as scorer:
        for fen, wins in rows:
            board = chess.Board(fen)
            scored = np.flatnonzero(wins != UNSCORED)
            assert len(scored) == 1, fen  # one scored move, the rest the sentinel
            found = scorer.score_best(board, chess.engine.Limit(depth=1))
            assert found is not None
            move, value = found
            assert list(board.legal_moves)[scored[0]] == move, fen
            assert abs(float(wins[scored[0]]) - value) <= 1 / 65535, fen


def test_the_same_games_for_any_worker_count(best_dir: Path, tmp_path: Path) -> None:
    """Game g depends on (seed, g) only, and the cache never changes a value."""
    two = tmp_path / "two"
    assert run_generate(two, 160, "--workers", "2", *BEST)["new"] == 160
    one = dict((fen, wins) for fen, wins in _rows(best_dir))
    other = dict((fen, wins) for fen, wins in _rows(two))
    assert one.keys() == other.keys()
    for fen, wins in one.items():
        np.testing.assert_array_equal(wins, other[fen])


def test_labels_all_is_the_default_and_records_nothing_new(tmp_path: Path) -> None:
    """`--labels all` output is what it was before the flag: no labels key, no best array."""
    out = tmp_path / "all"
    run_generate(out, 30)
    assert "labels" not in json.loads((out / "manifest.json").read_text())["settings"]
    for path in find_shards(out):
        shard = Shard(path)
        assert "labels" not in shard.meta and shard.best is None and shard.labels == "all"
        for _, _, wins in shard:
            assert wins.min() >= 0.0


def test_a_directory_keeps_one_kind_of_label(tmp_path: Path, best_dir: Path) -> None:
    plain = tmp_path / "all"
    run_generate(plain, 20)
    with pytest.raises(SourceError, match="holds --labels all data.*--labels best"):
        run_generate(plain, 40, *BEST)
    with pytest.raises(SourceError, match="holds --labels best data.*--labels all"):
        run_generate(best_dir, 200)
    again = run_generate(best_dir, 160, *BEST)  # the same labels: nothing to do
    assert again["new"] == 0 and again["positions"] == 160


def test_sv_and_bc_targets_are_the_best_value_and_slot_exactly(tmp_path: Path) -> None:
    """Also when the best value is 0.0 (a lost position), where a 0 sentinel would tie with
    it and make the bc target the first legal move."""
    board = chess.Board()
    legal = board.legal_moves.count()
    states = np.stack([tokenize(board).astype(np.uint8)] * 2)
    lost = np.full(legal, UNSCORED, np.float32)
    lost[7] = 0.0
    fine = np.full(legal, UNSCORED, np.float32)
    fine[3] = 0.61
    write_compact_shard(tmp_path / "s", states, [lost, fine], {"labels": "best"})
    shard = Shard(tmp_path / "s", verify=True)
    batch = collate([shard[0], shard[1]])
    assert best_slots(batch).tolist() == [7, 3]
    assert position_values(batch).tolist() == pytest.approx([0.0, 0.61], abs=1e-5)
    with pytest.raises(ValueError, match="exactly one scored move"):
        write_compact_shard(tmp_path / "t", states[:1], [np.zeros(legal)], {"labels": "best"})


@pytest.mark.parametrize("predictor", ["sv", "bc"])
def test_sv_and_bc_train_on_best_only_shards(best_dir: Path, tmp_path: Path, predictor: str):
    out = tmp_path / "run"
    run = config(best_dir, out, steps=24, eval_every=12, predictor=predictor, puzzles="")
    summary = fit.train(run, quiet=True)
    assert summary["steps"] == 24 and summary["predictor"] == predictor
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    assert train[-1]["loss"] < train[0]["loss"] - 0.1, train


def test_av_refuses_best_only_shards_and_a_mix(best_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--predictor av needs every move's value.*sv or bc"):
        fit.train(config(best_dir, tmp_path / "a", predictor="av", puzzles=""), quiet=True)
    plain = make_shard(tmp_path / "plain", 40)
    mixed = config(plain, tmp_path / "b", predictor="av", puzzles="")
    mixed.data.append(str(best_dir))
    with pytest.raises(CommandError, match="best-only"):
        fit.train(mixed, quiet=True)


def test_inspect_says_best_and_lists_the_one_scored_move(best_dir: Path, capsys) -> None:
    parser = ArgumentParser()
    inspect_data.add_arguments(parser)
    png = best_dir.parent / "inspect.png"
    assert inspect_data.run(parser.parse_args([str(best_dir), "--png", str(png)])) == 0
    assert "labels" in (text := capsys.readouterr().out) and "best" in text
    assert inspect_data.run(parser.parse_args([str(best_dir), "--sample", "5", "--json"])) == 0
    for line in capsys.readouterr().out.splitlines():
        values = json.loads(line)["values"]
        assert len(values) == 1 and 0.0 <= next(iter(values.values())) <= 1.0
    dataset = AnnotatedDataset(best_dir)
    assert dataset.labels == {"best"} and dataset.num_action_values == len(dataset) == 160


def test_the_mistake_rule() -> None:
    """The default temperatures 0.005…0.2 make 1%…40% of the non-random moves random."""
    assert mistake_probability(0.005) == pytest.approx(0.01)
    assert mistake_probability(0.2) == pytest.approx(0.4)
    assert mistake_probability(10.0) == MISTAKE_CAP

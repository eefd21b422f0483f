"""Annotation with the real Stockfish: values, an end-to-end run, and resume after SIGKILL."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from oneply.engine.cli import run_reporting
from oneply.engine.facts.moves import legal_move_ids
from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.engine.stockfish import close_stockfish, open_stockfish
from oneply.training.data import annotate
from oneply.training.data.dataset import AnnotatedDataset, Shard
from oneply.training.data.stockfish_scorer import StockfishScorer
from tests.conftest import REPO, stockfish_path
from tests.helpers.processes import session_processes, wait_until_gone
from tests.helpers.stockfish_reference import reference_values

pytestmark = pytest.mark.usefixtures("stockfish")


#: white to move: Qe8 mates, Qf7 stalemates
MATE_AND_STALEMATE = "7k/4Q3/6K1/8/8/8/8/8 w - - 0 1"


def _fens(count: int, seed: int = 0) -> list[str]:
    """Distinct positions with legal moves from seeded random games."""
    rng = random.Random(seed)
    fens, keys, board = [], set(), chess.Board()
    while len(fens) < count:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 50:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        key = " ".join(board.fen().split()[:4])
        if board.legal_moves.count() and key not in keys:
            keys.add(key)
            fens.append(board.fen())
    return fens


def _write_positions(path: Path, fens: list[str]) -> Path:
    path.write_text("".join(f + "\n" for f in fens))
    return path


def _args(*argv: str):
    parser = ArgumentParser()
    annotate.add_arguments(parser)
    return parser.parse_args(list(argv))


def _keys_in(out: Path) -> list[bytes]:
    dataset = AnnotatedDataset(out)
    return [position_key(dataset[i][0]) for i in range(len(dataset))]


def test_mates_and_stalemates_are_settled_without_the_engine(stockfish: str) -> None:
    board = chess.Board(MATE_AND_STALEMATE)
    with StockfishScorer(stockfish) as engine:
        values = engine.score_moves(board, chess.engine.Limit(depth=4))
    assert set(values) == set(board.legal_moves)
    assert values[chess.Move.from_uci("e7e8")] == 1.0
    assert values[chess.Move.from_uci("e7f7")] == 0.5
    assert all(0.0 <= v <= 1.0 for v in values.values())
    assert values[chess.Move.from_uci("e7a3")] > 0.9  # still winning for White


def test_end_to_end_tiny_run(tmp_path: Path, capsys) -> None:
    fens = _fens(18) + [MATE_AND_STALEMATE, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", ""]
    positions = _write_positions(tmp_path / "pos.txt", fens)
    out = tmp_path / "out"
    assert (
        annotate.run(
            _args(
                str(positions),
                "--out",
                str(out),
                "--depth",
                "5",
                "--workers",
                "1",
                "--chunk-size",
                "8",
            )
        )
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stockfish"].startswith("Stockfish")
    assert manifest["limit"] == {"depth": 5} and manifest["chunks_done"] == 3
    assert manifest["positions"] == 19 and manifest["skipped"] == 2  # stalemate + blank line
    dataset = AnnotatedDataset(out)
    assert dataset.manifest == manifest and len(dataset) == 19
    for fen, (state, moves, wins) in zip(fens, (dataset[i] for i in range(19)), strict=False):
        board = chess.Board(fen)
        np.testing.assert_array_equal(state, tokenize(board))
        np.testing.assert_array_equal(moves, legal_move_ids(board))
        assert np.all((wins >= 0) & (wins <= 1)) and len(set(wins.tolist())) > 1
    for entry in manifest["shards"]:
        assert Shard(out / entry["name"], verify=True).meta["sha256"] == entry["sha256"]
    assert "positions/s" in capsys.readouterr().out


@pytest.mark.slow
def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    fens = _fens(40, seed=3)
    positions = _write_positions(tmp_path / "pos.txt", fens)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "oneply.engine",
        "train",
        "annotate",
        str(positions),
        "--out",
        str(out),
        "--depth",
        "7",
        "--workers",
        "2",
        "--chunk-size",
        "4",
    ]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("chunk-*")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(session_processes(process.pid)) >= 3  # the run and 2 workers (+ engines)
        os.kill(process.pid, signal.SIGKILL)  # the run itself, mid-chunk, no cleanup
        process.wait()
        # its orphaned workers and their Stockfish die within ~2 s, without writing
        assert wait_until_gone(process.pid, 2.0) == []
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    done_before = len(list(out.glob("chunk-*")))
    assert 1 <= done_before < 10, "the kill should land mid-run"

    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{done_before} of 10 chunks already done" in result.stdout
    keys = _keys_in(out)
    expected = [position_key(tokenize(f)) for f in fens]
    assert sorted(keys) == sorted(expected) and len(set(keys)) == 40
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["positions"] == 40 and manifest["chunks_done"] == 10
    assert manifest["action_values"] == sum(chess.Board(f).legal_moves.count() for f in fens)
    assert not list(out.glob(".*tmp*"))


def test_resume_refuses_other_settings_and_bad_input(tmp_path: Path, capsys) -> None:
    positions = _write_positions(tmp_path / "pos.txt", _fens(3))
    out = tmp_path / "out"
    base = [str(positions), "--out", str(out), "--workers", "1"]
    assert annotate.run(_args(*base, "--depth", "3")) == 0
    assert annotate.run(_args(*base, "--depth", "3")) == 0  # nothing to redo
    assert "1 of 1 chunks already done" in capsys.readouterr().out
    assert run_reporting(annotate.run, _args(*base, "--depth", "4")) == 2
    assert "depth" in capsys.readouterr().err

    bad = tmp_path / "bad.txt"
    bad.write_text(_fens(1)[0] + "\nnot a fen\n")
    assert run_reporting(annotate.run, _args(str(bad), "--out", str(tmp_path / "o2"))) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert (
        run_reporting(annotate.run, _args(*base, "--depth", "3", "--stockfish", "/nonexistent/sf"))
        == 2
    )
    assert "Stockfish did not start" in capsys.readouterr().err


def test_shard_k_of_n_keeps_its_chunks(tmp_path: Path) -> None:
    positions = _write_positions(tmp_path / "pos.txt", _fens(6, seed=5))
    out = tmp_path / "out"
    argv = [str(positions), "--out", str(out), "--depth", "3", "--workers", "1"]
    assert annotate.run(_args(*argv, "--chunk-size", "2", "--shard", "1/2")) == 0
    assert sorted(p.name for p in out.glob("chunk-*")) == ["chunk-000001"]
    with pytest.raises(SystemExit):
        _args(*argv, "--shard", "2/2")


def test_grown_positions_file_redoes_only_the_partial_chunk(tmp_path: Path) -> None:
    fens = _fens(7, seed=9)
    positions = _write_positions(tmp_path / "pos.txt", fens[:5])
    out = tmp_path / "out"
    argv = [
        str(positions),
        "--out",
        str(out),
        "--depth",
        "3",
        "--workers",
        "1",
        "--chunk-size",
        "3",
    ]
    assert annotate.run(_args(*argv)) == 0
    first = (out / "chunk-000000" / "meta.json").read_text()
    _write_positions(positions, fens)  # the positions step appended two more
    assert annotate.run(_args(*argv)) == 0
    assert (out / "chunk-000000" / "meta.json").read_text() == first, "finished chunk kept"
    assert sorted(_keys_in(out)) == sorted(position_key(tokenize(f)) for f in fens)
    _write_positions(positions, fens[::-1])
    assert run_reporting(annotate.run, _args(*argv)) == 2  # different positions: refuse to mix


def test_values_do_not_depend_on_workers_or_chunks(tmp_path: Path) -> None:
    """Stockfish's hash and history must not carry from one position to the next: without a
    fresh game per position most of these values differed between the two runs."""
    positions = _write_positions(tmp_path / "pos.txt", _fens(48, seed=11))
    runs = {"one": ("--workers", "1", "--chunk-size", "48"), "two": ("--workers", "2")}
    for name, extra in runs.items():
        args = _args(str(positions), "--out", str(tmp_path / name), "--depth", "6", *extra)
        if name == "two":
            args.chunk_size = 5
        assert annotate.run(args) == 0
    one, two = AnnotatedDataset(tmp_path / "one"), AnnotatedDataset(tmp_path / "two")
    values = {position_key(s): w for s, _, w in (one[i] for i in range(len(one)))}
    assert len(values) == len(two) == 48
    for i in range(len(two)):
        state, _, wins = two[i]
        np.testing.assert_array_equal(wins, values[position_key(state)])


def _pgn(path: Path, games: int, seed: int = 0) -> Path:
    """Random games as PGN, the first game twice (its positions must be scored once)."""
    import chess.pgn

    rng = random.Random(seed)
    texts = []
    for _ in range(games):
        board, game = chess.Board(), chess.pgn.Game()
        node = game
        for _ in range(rng.randint(8, 40)):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = rng.choice(moves)
            board.push(move)
            node = node.add_variation(move)
        texts.append(str(game))
    path.write_text("\n\n".join([*texts, texts[0]]) + "\n")
    return path


def _pgn_keys(path: Path) -> dict[bytes, str]:
    import chess.pgn

    from oneply.training.data.pgn_annotate import game_positions

    keys: dict[bytes, str] = {}
    with open(path) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            for board in game_positions(game):
                keys.setdefault(position_key(tokenize(board)), board.fen())
    return keys


def test_pgn_games_are_streamed_deduplicated_excluded_and_resumed(tmp_path: Path) -> None:
    pgn = _pgn(tmp_path / "games.pgn", 12)
    expected = _pgn_keys(pgn)
    banned_fen = list(expected.values())[30]
    puzzles = tmp_path / "p.csv"
    board = chess.Board(banned_fen)
    puzzles.write_text(f"PuzzleId,FEN,Moves\nx,{banned_fen},{next(iter(board.legal_moves))}\n")
    banned = {position_key(tokenize(banned_fen))}
    board.push(next(iter(board.legal_moves)))
    banned.add(position_key(tokenize(board)))
    out = tmp_path / "out"
    common = [str(pgn), "--out", str(out), "--depth", "2", "--exclude", str(puzzles)]
    common += ["--chunk-size", "40", "--bench-sample", "0"]
    command = [sys.executable, "-m", "oneply.engine", "train", "annotate", *common]
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("pgn-*")) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        assert wait_until_gone(process.pid, 2.0) == []
    assert annotate.run(_args(*common, "--workers", "2", "--json")) == 0
    dataset = AnnotatedDataset(out)
    stored = {position_key(s): (s, w) for s, _, w in (dataset[i] for i in range(len(dataset)))}
    assert len(stored) == len(dataset)  # nothing twice
    assert stored.keys() == expected.keys() - banned
    engine = open_stockfish(stockfish_path())
    try:
        for key in list(stored)[::25]:
            board = chess.Board(expected[key])
            fresh = reference_values(engine, board, chess.engine.Limit(depth=2))
            wins = np.array([fresh[m] for m in board.legal_moves])
            np.testing.assert_allclose(stored[key][1], wins, atol=1 / 65535)
    finally:
        close_stockfish(engine)
    assert annotate.run(_args(*common)) == 0  # all done: nothing new
    assert len(AnnotatedDataset(out)) == len(stored)


def test_pgn_json_reports_the_rate_and_stockfish_alone(tmp_path: Path, capsys) -> None:
    pgn = _pgn(tmp_path / "games.pgn", 3)
    out = tmp_path / "out"
    args = _args(str(pgn), "--out", str(out), "--depth", "1", "--bench-sample", "10", "--json")
    assert annotate.run(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["new"] == len(_pgn_keys(pgn)) == len(AnnotatedDataset(out))
    assert result["positions_per_s"] > 0 and result["stockfish_positions_per_s"] > 0
    assert result["overhead"] < 1 and result["bytes_per_position"] > 0 and result["seconds"] > 0


def test_every_source_is_a_train_step_and_pgn_equals_annotate(tmp_path: Path, capsys) -> None:
    """`train pgn X.pgn` is the PGN source itself: the same shards as `train annotate X.pgn`,
    and every source of training/data/sources.py is a `oneply train` step with its own --help."""
    from oneply.engine.cli import main as cli_main
    from oneply.training.cli import STEPS
    from oneply.training.data.sources import SOURCES

    for name, module in SOURCES.items():
        assert STEPS[name][0] == module
        with pytest.raises(SystemExit) as exited:
            cli_main(["train", name, "--help"])
        assert exited.value.code == 0 and f"oneply train {name}" in capsys.readouterr().out
    pgn = _pgn(tmp_path / "games.pgn", 2)
    common = ["--depth", "1", "--bench-sample", "0", "--workers", "1"]
    assert cli_main(["train", "pgn", str(pgn), "--out", str(tmp_path / "a"), *common]) == 0
    assert cli_main(["train", "annotate", str(pgn), "--out", str(tmp_path / "b"), *common]) == 0
    one, other = AnnotatedDataset(tmp_path / "a"), AnnotatedDataset(tmp_path / "b")
    assert len(one) == len(other) == len(_pgn_keys(pgn))
    for i in range(len(one)):
        np.testing.assert_array_equal(one[i][0], other[i][0])
        np.testing.assert_array_equal(one[i][2], other[i][2])
    missing = ["train", "pgn", str(tmp_path / "none.pgn"), "--out", str(tmp_path / "c")]
    assert cli_main(missing) == 2
    assert "oneply train pgn: error:" in capsys.readouterr().err

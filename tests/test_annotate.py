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

from engine.moves import legal_move_ids
from engine.tokenizer import tokenize
from training import annotate
from training.dataset import AnnotatedDataset, Shard, position_key

REPO = Path(__file__).resolve().parents[1]
STOCKFISH = Path(annotate.DEFAULT_STOCKFISH)
pytestmark = pytest.mark.skipif(not STOCKFISH.exists(), reason="needs Stockfish (REFERENCE §5)")

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


def test_mates_and_stalemates_are_settled_without_the_engine() -> None:
    board = chess.Board(MATE_AND_STALEMATE)
    with chess.engine.SimpleEngine.popen_uci(str(STOCKFISH)) as engine:
        values = annotate.score_moves(engine, board, chess.engine.Limit(depth=4))
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


def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    fens = _fens(40, seed=3)
    positions = _write_positions(tmp_path / "pos.txt", fens)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "engine",
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
        os.kill(process.pid, signal.SIGKILL)  # the run itself, mid-chunk, no cleanup
        process.wait()
        time.sleep(0.5)  # its orphaned workers notice and exit without writing
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
    assert annotate.run(_args(*base, "--depth", "4")) == 2
    assert "depth" in capsys.readouterr().err

    bad = tmp_path / "bad.txt"
    bad.write_text(_fens(1)[0] + "\nnot a fen\n")
    assert annotate.run(_args(str(bad), "--out", str(tmp_path / "o2"))) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert annotate.run(_args(*base, "--depth", "3", "--stockfish", "/nonexistent/sf")) == 2
    assert "cannot start Stockfish" in capsys.readouterr().err


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
    assert annotate.run(_args(*argv)) == 2  # different positions: refuse to mix

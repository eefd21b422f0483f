"""Position generation with the real Stockfish: uniqueness, puzzle exclusion, mix, resume."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from collections import Counter
from pathlib import Path

import chess
import pytest

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.engine.cli import run_reporting
from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.training.data import positions
from oneply.training.data.dataset import DatasetError, puzzle_keys
from tests.conftest import REPO


def _args(*argv: str):
    parser = ArgumentParser()
    positions.add_arguments(parser)
    return parser.parse_args(list(argv))


def _puzzle_csv(path: Path) -> Path:
    """One puzzle starting from the position after 1.e4 (sure to come up from the books)."""
    path.write_text(
        "PuzzleId,FEN,Moves,Rating,Themes,GameUrl\n"
        "t1,rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1,e7e5 g1f3,1500,x,u\n"
    )
    return path


def test_exclusions_cover_every_position_of_the_line(tmp_path: Path) -> None:
    keys = puzzle_keys([_puzzle_csv(tmp_path / "p.csv")])
    board = chess.Board()
    for uci in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(uci)
    stats: Counter = Counter()
    fresh = positions._fresh(
        [board.fen(), chess.Board().fen(), chess.Board().fen()], set(), keys, stats
    )
    assert fresh == [chess.Board().fen()] and stats == {"excluded": 1, "duplicates": 1}


def test_bad_exclusion_csv_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("PuzzleId,FEN,Moves\nx,not a fen,e2e4\n")
    with pytest.raises(DatasetError, match="bad.csv:2"):
        puzzle_keys([bad])
    with pytest.raises(DatasetError, match="missing.csv"):
        puzzle_keys([tmp_path / "missing.csv"])


def test_game_phase_rule() -> None:
    assert positions.game_phase(chess.Board()) == "opening"
    assert positions.game_phase(chess.Board("4k3/8/8/8/8/8/4P3/R3K3 w - - 0 40")) == "endgame"
    middle = chess.Board("r1bq1rk1/ppp2ppp/2np1n2/2b1p3/2B1P3/2NP1N2/PPP2PPP/R1BQ1RK1 w - - 0 14")
    assert positions.game_phase(middle) == "middlegame"


@pytest.mark.slow
@pytest.mark.usefixtures("stockfish")
def test_generate_resume_unique_and_excluded(tmp_path: Path) -> None:
    out = tmp_path / "pos.txt"
    puzzles = _puzzle_csv(tmp_path / "p.csv")
    csvs = [puzzles] + [p for p in [DEV_PUZZLES] if p.exists()]
    common = ["--out", str(out), "--seed", "7", "--max-nodes", "2000"]
    for csv in csvs:
        common += ["--exclude", str(csv)]
    assert positions.run(_args(*common, "--count", "40", "--workers", "1")) == 0
    assert len(out.read_text().splitlines()) == 40

    with open(out, "a") as file:  # a run killed mid-write leaves a torn last line
        file.write("rnbqkbnr/pppp")
    assert positions.run(_args(*common, "--count", "90", "--workers", "2")) == 0

    fens = out.read_text().splitlines()
    assert len(fens) == 90
    keys = [positions.fen_key(f) for f in fens]
    assert len(set(keys)) == 90, "positions are unique by board, side, castling, en passant"
    excluded = puzzle_keys(csvs)
    assert not {position_key(tokenize(f)) for f in fens} & excluded
    boards = [chess.Board(f) for f in fens]  # every line is a valid FEN
    assert all(b.is_valid() and b.legal_moves.count() for b in boards)

    manifest = json.loads(out.with_name("pos.txt.manifest.json").read_text())
    mix = manifest["mix"]
    assert manifest["count"] == 90 and manifest["sessions"] == 2
    assert manifest["settings"]["seed"] == 7 and manifest["stats"]["games"] >= 2
    for histogram in mix.values():
        assert sum(histogram.values()) == 90
    assert set(mix["phase"]) <= {"opening", "middlegame", "endgame"} and len(mix["phase"]) >= 2

    assert positions.run(_args(*common, "--count", "50")) == 0  # already enough: no work
    assert len(out.read_text().splitlines()) == 90


def test_bad_arguments_are_clear_errors(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "p.txt")
    assert run_reporting(positions.run, _args("--out", out, "--count", "0")) == 2
    assert "--count" in capsys.readouterr().err
    for book in (tmp_path, tmp_path / "missing.bin", tmp_path / "odd.bin"):
        (tmp_path / "odd.bin").write_bytes(b"not a book")
        assert (
            run_reporting(positions.run, _args("--out", out, "--count", "5", "--books", str(book)))
            == 2
        )
        assert f"{book}: " in capsys.readouterr().err and not Path(out).exists()


def _descendants(pid: int) -> set[int]:
    """PIDs of every living process below `pid` (from /proc, no psutil needed)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_workers_and_their_stockfish(tmp_path: Path) -> None:
    """`kill` (or `docker stop`) must not orphan the pool: workers and Stockfish go too."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "pos.txt"
    cmd = [sys.executable, "-m", "oneply.engine", "train", "positions", "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, "--count", "100000", "--workers", "2", "--seed", "5"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # like a service: not in the test's process group
    )
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and out.stat().st_size > 0) and time.monotonic() < deadline:
            time.sleep(0.2)
        below = _descendants(proc.pid)
        assert len(below) >= 4, "expected 2 workers, each with a Stockfish"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 130
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in below if _alive(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()

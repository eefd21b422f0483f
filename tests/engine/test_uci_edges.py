"""`oneply uci` at the protocol's edges: drawn positions that still have moves, option values
that cannot be used, reloads that must not eat a timed `go`, and searchmoves that are not legal.
Each test drives the real engine process over pipes or through python-chess's UCI client."""

from __future__ import annotations

import sys
import time

import chess
import chess.engine
import pytest

from tests.conftest import REPO
from tests.helpers.uci import RawEngine

#: `oneply uci` whose model loader sleeps first: a stand-in for a big model on a slow disk
SLOW_LOADER = """
import sys, time
import oneply.engine.uci.engine as uci
real = uci.load_model
def slow(*args):
    time.sleep(float(sys.argv[1]))
    return real(*args)
uci.load_model = slow
from oneply.engine.cli import main
sys.exit(main(["uci", *sys.argv[2:]]))
"""
LOAD_DELAY_S = 1.5


@pytest.fixture
def raw_engine(tiny_onnx):
    engine = RawEngine("--model", str(tiny_onnx))
    yield engine
    engine.close()


def errors_after(engine: RawEngine, command: str) -> list[str]:
    """The `info string error` lines `command` alone produces (an `isready` marks the end)."""
    engine.send(command)
    engine.send("isready")
    return [t for t in engine.read_until("readyok") if t.startswith("info string error")]


def test_fivefold_repetition_still_gets_a_legal_move_and_says_it_is_drawn(raw_engine):
    shuffle = "g1f3 g8f6 f3g1 f6g8 " * 4
    board = chess.Board()
    for uci in shuffle.split():
        board.push_uci(uci)
    assert board.is_fivefold_repetition() and board.is_game_over()
    raw_engine.send(f"position startpos moves {shuffle}")
    raw_engine.send("go movetime 50")
    lines = raw_engine.read_until("bestmove")
    move = chess.Move.from_uci(lines[-1].split()[1])
    assert move in board.legal_moves
    assert (
        "info string the game is already drawn (fivefold repetition); playing a legal move" in lines
    )


def test_dead_material_position_gets_a_move_too(raw_engine):
    raw_engine.send("position fen 8/8/8/4k3/8/8/8/4K3 w - - 0 1")
    raw_engine.send("go movetime 50")
    lines = raw_engine.read_until("bestmove")
    assert lines[-1] != "bestmove 0000"
    assert any("already drawn (insufficient material)" in t for t in lines)


@pytest.mark.parametrize(
    "command, fragment",
    [
        ("setoption name Seed value -2", "Seed"),
        ("setoption name StockfishPath value /etc/passwd", "/etc/passwd"),
        ("setoption name ModelFile value /tmp", "is a directory"),
        ("setoption name Threads value 0", "Threads"),
        ("setoption name Threads value 100000", "Threads"),
        ("setoption name MultiPV value 219", "MultiPV"),
        ("setoption name Temperature value nan", "Temperature"),
        ("setoption name FallbackThreshold value 1.5", "FallbackThreshold"),
    ],
)
def test_unusable_option_value_is_reported_at_setoption(raw_engine, command, fragment):
    raw_engine.send("isready")
    raw_engine.read_until("readyok")
    raw_engine.send(command)  # no isready, no go: the error comes from setoption itself
    line = raw_engine.read_until("info string error", timeout=20)[-1]
    assert fragment in line, line
    raw_engine.send("position startpos")
    raw_engine.send("go movetime 50")
    best = raw_engine.read_until("bestmove")[-1]
    assert chess.Move.from_uci(best.split()[1]) in chess.Board().legal_moves


def test_accepted_values_are_silent(raw_engine):
    for command in (
        "setoption name Seed value -1",
        "setoption name Seed value 7",
        "setoption name StockfishPath value <empty>",
        "setoption name Threads value 2",
    ):
        assert errors_after(raw_engine, command) == [], command


def test_reload_happens_at_setoption_not_inside_the_timed_go(tiny_onnx):
    """With a loader that takes 1.5 s, changing Threads must load at `setoption` (the model
    line comes with no `isready` and no `go`), and the next `go movetime 100` answers in
    time: python-chess sends `setoption` then `go` with no `isready` between them."""
    slow = RawEngine(
        "--model", str(tiny_onnx), command=[sys.executable, "-c", SLOW_LOADER, str(LOAD_DELAY_S)]
    )
    try:
        slow.send("isready")
        slow.read_until("readyok", timeout=30)
        began = time.monotonic()
        slow.send("setoption name Threads value 1")
        slow.read_until("info string model", timeout=30)  # reloaded by setoption alone
        assert time.monotonic() - began >= LOAD_DELAY_S
        slow.send("position startpos moves e2e4")
        sent = time.monotonic()
        slow.send("go movetime 100")
        lines = slow.read_until("bestmove", timeout=30)
        elapsed = time.monotonic() - sent
        assert elapsed < LOAD_DELAY_S / 2, (elapsed, lines)  # no load inside the go
        assert not any(t.startswith("info string model") for t in lines)
    finally:
        slow.close()


def test_python_chess_option_change_between_moves_stays_within_movetime(tiny_onnx):
    """python-chess's `play(..., options=...)` sends setoption and go back to back; the
    reload delays the `go` line's reading, never the engine's own clock."""
    cmd = [sys.executable, "-c", SLOW_LOADER, "0.5", "--model", str(tiny_onnx)]
    with chess.engine.SimpleEngine.popen_uci(cmd, cwd=REPO, timeout=60) as engine:
        board = chess.Board()
        engine.play(board, chess.engine.Limit(time=0.1))
        result = engine.play(
            board, chess.engine.Limit(time=0.1), options={"Threads": 1}, info=chess.engine.INFO_ALL
        )
        assert result.move in board.legal_moves
        assert result.info.get("time", 0) < 0.5  # the engine's own time: no load inside


def test_illegal_searchmoves_are_reported_and_the_legal_one_is_played(raw_engine):
    raw_engine.send("position startpos")
    raw_engine.send("go movetime 50 searchmoves e7e5 e2e4 zz99")
    lines = raw_engine.read_until("bestmove")
    warnings = [t for t in lines if t.startswith("info string warning: searchmoves")]
    assert len(warnings) == 2 and "e7e5" in warnings[0] and "zz99" in warnings[1]
    assert lines[-1] == "bestmove e2e4"
    raw_engine.send("go movetime 50 searchmoves e7e5")
    lines = raw_engine.read_until("bestmove")
    assert any("no legal move in searchmoves" in t for t in lines)
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves

"""`oneply uci` driven as a subprocess: by python-chess's UCI client and by raw pipes."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

import chess
import chess.engine
import pytest

from tests.conftest import ENGINE_CMD, REPO, stockfish_path

UCI_CMD = [*ENGINE_CMD, "uci"]


class RawEngine:
    """`oneply uci` over raw pipes, with a reader thread so reads can time out."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [*UCI_CMD, *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode(errors="replace").rstrip("\n"))

    def send(self, data: str | bytes) -> None:
        self.proc.stdin.write(data if isinstance(data, bytes) else (data + "\n").encode())
        self.proc.stdin.flush()

    def read_until(self, prefix: str, timeout: float = 20.0) -> list[str]:
        """All lines up to and including the first that starts with prefix."""
        seen, end = [], time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} within {timeout}s; got {seen}") from None
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        assert self.proc.returncode == 0


@pytest.fixture
def raw_engine(tiny_onnx):
    engine = RawEngine("--model", str(tiny_onnx))
    yield engine
    engine.close()


def test_full_game_against_stockfish_with_clock():
    """Every bestmove legal (python-chess checks) and inside its clock budget."""
    oneply = chess.engine.SimpleEngine.popen_uci(UCI_CMD, cwd=REPO)
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path())
    try:
        stockfish.configure({"Skill Level": 0, "Threads": 1})
        assert oneply.id["name"].startswith("oneply")
        board = chess.Board()
        clock = {chess.WHITE: 20.0, chess.BLACK: 20.0}
        increment = 0.1
        while not board.is_game_over(claim_draw=True) and board.ply() < 300:
            engine = oneply if board.turn == chess.WHITE else stockfish
            limit = chess.engine.Limit(
                white_clock=clock[chess.WHITE],
                black_clock=clock[chess.BLACK],
                white_inc=increment,
                black_inc=increment,
            )
            start = time.monotonic()
            result = engine.play(board, limit)
            used = time.monotonic() - start
            if engine is oneply:
                assert used < clock[chess.WHITE], f"oneply flagged at ply {board.ply()}"
                assert result.move in board.legal_moves
            clock[board.turn] += increment - used
            board.push(result.move)
        assert board.ply() >= 10
    finally:
        oneply.quit()
        stockfish.quit()


def test_movetime_is_respected_and_info_is_reported(raw_engine):
    raw_engine.send("setoption name MultiPV value 3")
    raw_engine.send("setoption name UCI_ShowWDL value true")
    raw_engine.send("position startpos moves e2e4 e7e5")
    start = time.monotonic()
    raw_engine.send("go movetime 200")
    lines = raw_engine.read_until("bestmove")
    assert time.monotonic() - start < 2.0
    infos = [line for line in lines if line.startswith("info depth")]
    assert [line.split(" multipv ")[1].split()[0] for line in infos] == ["1", "2", "3"]
    assert all(" wdl " in line and " nodes 29 " in line and " pv " in line for line in infos)
    best = lines[-1].split()[1]
    assert infos[0].endswith(f"pv {best}")
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(best) in board.legal_moves


def test_mating_move_is_reported_as_mate_1(raw_engine):
    raw_engine.send("setoption name MultiPV value 218")
    raw_engine.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    raw_engine.send("go nodes 1")
    lines = raw_engine.read_until("bestmove")
    assert any("score mate 1" in line and line.endswith("pv a1a8") for line in lines)
    assert sum("score mate 1" in line for line in lines) == 1


def test_infinite_and_ponder_wait_for_stop_and_ponderhit(raw_engine):
    raw_engine.send("position startpos")
    raw_engine.send("go infinite")
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok")
    assert not any(line.startswith("bestmove") for line in lines)
    time.sleep(0.5)
    assert not any(line.startswith("bestmove") for line in list(raw_engine.lines.queue))
    raw_engine.send("stop")
    raw_engine.read_until("bestmove")
    raw_engine.send("position startpos moves e2e4")
    raw_engine.send("go ponder wtime 1000 btime 1000")
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in list(raw_engine.lines.queue))
    raw_engine.send("ponderhit")
    raw_engine.read_until("bestmove")


BAD_LINES: list[str | bytes] = [
    "",
    "   ",
    "hello",
    "position",
    "position nonsense",
    "position fen",
    "position fen not/a/fen w - - 0 1",
    "position fen 8/8/8/8/8/8/8/8 w - - 0 1",  # no kings: parses but impossible
    "position startpos moves e2e5",
    "position startpos moves e2e4 e2e4",
    "position startpos moves zz99",
    "go depth",
    "go wtime abc",
    "go sideways",
    "setoption",
    "setoption name",
    "setoption name NoSuchOption value 3",
    "setoption name MultiPV value many",
    "setoption name MultiPV value 100000",
    "setoption name UCI_ShowWDL value maybe",
    "debug sometimes",
    b"\xff\xfe\x00\x9c garbage \x80\n",
    b"\x1b[31m\x07\n",
    "x" * 5000,
]


def test_bad_input_script_never_breaks_the_engine(raw_engine):
    raw_engine.send("position startpos moves e2e4")
    for line in BAD_LINES:
        raw_engine.send(line if isinstance(line, bytes) else line)
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok")
    errors = [line for line in lines if line.startswith("info string error:")]
    assert len(errors) == len(BAD_LINES), lines
    # The position survived all of it: black is to move after 1.e4.
    raw_engine.send("go movetime 100")
    best = raw_engine.read_until("bestmove")[-1].split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves
    assert raw_engine.proc.poll() is None


def test_missing_model_says_what_to_do_and_still_moves(tmp_path):
    engine = RawEngine("--model", str(tmp_path / "missing.onnx"))
    try:
        engine.send("isready")
        lines = engine.read_until("readyok")
        assert any("not found" in line and "ONEPLY_MODEL" in line for line in lines)
        engine.send("position startpos")
        engine.send("go movetime 50")
        lines = engine.read_until("bestmove")
        assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
    finally:
        engine.close()


def test_game_over_position_answers_null_move(raw_engine):
    raw_engine.send("position fen 7k/5QQ1/8/8/8/8/8/K7 b - - 0 1")
    raw_engine.send("go movetime 50")
    assert raw_engine.read_until("bestmove")[-1] == "bestmove 0000"


def test_banner_goes_to_stderr_only(tiny_onnx):
    proc = subprocess.run(
        [*UCI_CMD, "--model", str(tiny_onnx)],
        input=b"uci\nquit\n",
        capture_output=True,
        cwd=REPO,
        timeout=30,
    )
    assert proc.stdout.decode().splitlines()[0].startswith("id name oneply")
    assert b"oneply" in proc.stderr and b"uciok" in proc.stdout

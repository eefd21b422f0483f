"""`oneply uci` driven as a subprocess: by python-chess's UCI client and by raw pipes."""

from __future__ import annotations

import subprocess
import time

import chess
import chess.engine
import onnxruntime as ort
import pytest

from oneply.engine.stockfish import open_stockfish
from tests.conftest import ENGINE_CMD, REPO, stockfish_path
from tests.helpers.uci import UCI_CMD, RawEngine


@pytest.fixture
def raw_engine(tiny_onnx):
    engine = RawEngine("--model", str(tiny_onnx))
    yield engine
    engine.close()


@pytest.mark.slow
def test_full_game_against_stockfish_with_clock():
    """Every bestmove legal (python-chess checks) and inside its clock budget."""
    oneply = chess.engine.SimpleEngine.popen_uci(UCI_CMD, cwd=REPO)
    stockfish = open_stockfish(stockfish_path(), {"Skill Level": 0, "Threads": 1})
    try:
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


# -- hostile input (issue 13): every `go` answered, every `isready` answered -------------------

#: `go` lines that once got no `bestmove` at all; each must now be answered with a legal move
BAD_GO = [
    "go movetime 1e3",
    "go movetime abc",
    "go movetime",
    "go foo",
    "go movetime 100 foo",
    "go wtime 1000 btime",
    "go wtime 1000.5 btime 1000",
    "go movetime " + "9" * 4301,
    "go wtime 1000 btime 1000 movestogo 40 foo",
    "go depth",
    "go wtime abc",
    "go sideways",
    "go nodes -5 searchmoves zz99",
]


def test_every_malformed_go_gets_a_legal_bestmove(raw_engine):
    board = chess.Board()
    board.push_uci("e2e4")
    raw_engine.send("position startpos moves e2e4")
    for line in BAD_GO:
        raw_engine.send(line)
        lines = raw_engine.read_until("bestmove", timeout=10)
        assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves, (line, lines)
        assert not any("internal error" in text for text in lines), (line, lines)
        assert all(len(text) < 400 for text in lines)
    raw_engine.send("go movetime abc")
    lines = raw_engine.read_until("bestmove")
    assert any(t.startswith("info string") and "'abc'" in t for t in lines), lines


def test_python_chess_client_gets_a_move_for_a_malformed_go(tiny_onnx):
    """python-chess sends `go movetime 1000`; extra tokens from a GUI must not lose the game."""
    engine = chess.engine.SimpleEngine.popen_uci([*UCI_CMD, "--model", str(tiny_onnx)], cwd=REPO)
    try:
        board = chess.Board()
        result = engine.play(board, chess.engine.Limit(time=0.1), options={})
        assert result.move in board.legal_moves
    finally:
        engine.quit()


@pytest.mark.parametrize(
    "value",
    ["A" * 1_000_000, "~nosuchuser/m.onnx", "/dev/null", "bad\x00name.onnx", "nowhere.onnx"],
    ids=["too-long", "unknown-user", "not-onnx", "nul-byte", "missing"],
)
def test_bad_model_file_keeps_the_previous_model_and_isready_answers(raw_engine, value):
    raw_engine.send("isready")
    first = [t for t in raw_engine.read_until("readyok") if t.startswith("info string model")]
    assert first, "the good model loads first"
    assert first[0].split(" on ")[-1] in ort.get_available_providers()  # names the provider
    raw_engine.send(f"setoption name ModelFile value {value}")
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok", timeout=30)
    errors = [t for t in lines if t.startswith("info string error")]
    assert len(errors) == 1 and "Keeping tiny.onnx" in errors[0], lines
    assert all(len(t) < 1000 for t in lines)
    raw_engine.send("position startpos")
    raw_engine.send("go movetime 50")
    lines = raw_engine.read_until("bestmove")
    assert "info string rule" in "\n".join(lines)  # the model, not a fallback, chose it
    raw_engine.send("isready")
    assert raw_engine.read_until("readyok") == ["readyok"]  # reported once, not every time


def test_tiny_temperature_samples_without_nan(raw_engine):
    raw_engine.send("setoption name Temperature value 1e-320")
    raw_engine.send("setoption name SampleMoves value 5")
    raw_engine.send("position startpos")
    raw_engine.send("go movetime 100")
    lines = raw_engine.read_until("bestmove")
    assert "info string rule sample" in lines, lines
    assert not any("error" in t for t in lines)
    best = lines[-1].split()[1]
    assert next(t for t in lines if " multipv 1 " in t).endswith(f"pv {best}")


def test_huge_bad_fen_gives_a_short_error(raw_engine):
    raw_engine.send("position fen " + "x" * 1_000_000)
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok")
    errors = [t for t in lines if t.startswith("info string error")]
    assert len(errors) == 1 and "invalid FEN" in errors[0] and len(errors[0]) < 500


def test_position_moves_without_start_says_what_is_missing(raw_engine):
    raw_engine.send("position moves e2e4")
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok")
    errors = [t for t in lines if t.startswith("info string error")]
    assert len(errors) == 1 and "startpos or fen" in errors[0], lines
    assert "internal error" not in errors[0]


def test_stockfish_path_is_checked_when_set(raw_engine, tmp_path):
    raw_engine.send(f"setoption name StockfishPath value {tmp_path / 'no-stockfish'}")
    raw_engine.send(f"setoption name StockfishPath value {stockfish_path()}")
    raw_engine.send("isready")
    lines = raw_engine.read_until("readyok")
    errors = [t for t in lines if t.startswith("info string error")]
    assert len(errors) == 1 and "StockfishPath" in errors[0] and "no-stockfish" in errors[0]


def test_unknown_subcommand_exits_2_naming_it():
    proc = subprocess.run(
        [*ENGINE_CMD, "no-such-command", "--help"], capture_output=True, cwd=REPO, timeout=30
    )
    assert proc.returncode == 2
    assert b"no-such-command" in proc.stderr and b"usage" in proc.stderr


# -- one think-time budget and one inference-failure rule for UCI and the bot (issue 12.4) ------


def test_think_budget_is_one_formula_for_uci_and_bot():
    from oneply.bot.game import think_time
    from oneply.engine.play.clock import MAX_THINK_MS, think_budget_ms
    from oneply.engine.uci.parsing import GoLimits

    for left, inc in [(60_000, 1_000), (3_000, 0), (500, 2_000), (900_000, 10_000)]:
        limits, notes = GoLimits.parse(f"wtime {left} btime 1 winc {inc} binc 0".split())
        assert not notes
        expected = think_budget_ms(left, inc)
        assert limits.budget_ms(chess.WHITE, 0) == expected
        assert think_time(left, inc) == expected / 1000
        assert expected <= max(left / 3, 1) and expected <= MAX_THINK_MS
    # Move Overhead and movestogo are the UCI inputs of the same function
    limits, _ = GoLimits.parse("wtime 60000 btime 60000 movestogo 10".split())
    assert limits.budget_ms(chess.BLACK, 100) == think_budget_ms(60_000, 0, 10, 100) == 5_900
    assert think_time(None, None) * 1000 == MAX_THINK_MS  # correspondence: the cap


MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"


def test_inference_failure_plays_the_shared_fallback(tmp_path):
    """No model: with time, Stockfish's move (it mates); with too little, a random move."""
    engine = RawEngine("--model", str(tmp_path / "missing.onnx"))
    try:
        engine.send(f"position fen {MATE_IN_ONE}")
        engine.send("go movetime 3000")
        lines = engine.read_until("bestmove")
        assert "info string rule fallback_stockfish" in lines and lines[-1] == "bestmove a1a8"
        engine.send("setoption name StockfishPath value /bin/true")  # exists, not a Stockfish
        engine.send("go movetime 3000")
        lines = engine.read_until("bestmove")
        assert "info string rule fallback_random" in lines, lines
        assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board(MATE_IN_ONE).legal_moves
    finally:
        engine.close()

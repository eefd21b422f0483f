"""The match runner against real engines: Stockfish at tiny node counts, `oneply uci`, and small
misbehaving engines (tests/helpers/engines/misbehaving.py). Every test also checks that no
engine process outlives the match."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.pgn
import pytest

from oneply.arena import match
from oneply.arena.engines import Adjudicator, EngineStartError
from oneply.arena.game import EvalStreak, format_comment, rules_outcome, tablebase_outcome
from oneply.arena.openings import load_openings
from oneply.arena.results import GameRecord, Scoreboard
from oneply.arena.runner import identify, run_match
from oneply.arena.settings import (
    TERM_ABANDONED,
    TERM_ADJUDICATION,
    TERM_ILLEGAL,
    TERM_NORMAL,
    TERM_TIME,
    EngineSpec,
    MatchSettings,
    TimeControl,
)
from oneply.engine.cli import main as cli_main
from oneply.engine.play.books import open_tablebase
from tests.conftest import stockfish_path

BOOK = "/usr/share/games/gnuchess/book.bin"
ECO = "/usr/share/pgn-extract/eco.pgn"
BAD_ENGINE = str(Path(__file__).parents[1] / "helpers" / "engines" / "misbehaving.py")


def assert_all_exited(pids: list[int], wait: float = 5.0) -> None:
    """Each PID must be gone (killed and reaped); os.kill(pid, 0) succeeds while it exists."""
    assert pids, "the match should report the PIDs it spawned"
    deadline = time.monotonic() + wait
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"engine process {pid} still running after the match")
            time.sleep(0.05)


def stockfish(nodes: int, options: tuple[tuple[str, str], ...] = ()) -> EngineSpec:
    tc = TimeControl(nodes=nodes)
    return EngineSpec((stockfish_path(),), (("Threads", "1"), ("Hash", "16"), *options), tc)


def bad_engine(mode: str, after: int = 3, tc: TimeControl | None = None) -> EngineSpec:
    tc = tc or TimeControl(nodes=1)
    return EngineSpec((sys.executable, BAD_ENGINE, mode, str(after)), (), tc)


def settings(a: EngineSpec, b: EngineSpec, games: int, **kw) -> MatchSettings:
    base = dict(
        games=games,
        openings=load_openings(BOOK, (games + 1) // 2, 6, seed=3),
        concurrency=2,
        move_timeout=20.0,
        startup_timeout=10.0,
        adjudicate_nodes=2000,
        progress=False,
    )
    base.update(kw)
    return MatchSettings(engine_a=a, engine_b=b, **base)


# --------------------------------------------------------------------------- real matches


def test_cli_stockfish_vs_stockfish(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pgn_path, json_path = tmp_path / "games.pgn", tmp_path / "result.json"
    code = cli_main(
        [
            "match",
            stockfish_path(),
            stockfish_path(),
            "--games=4",
            "--nodes-a=300",
            "--nodes-b=1500",
            "--option=Threads=1",
            "--option-b=Hash=16",
            "--concurrency=2",
            f"--openings={BOOK}",
            f"--pgn={pgn_path}",
            f"--json={json_path}",
            "--adjudicate-nodes=2000",
            "--quiet",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "W/D/L" in out and "Elo pentanomial" in out

    data = json.loads(json_path.read_text())  # strict JSON (no Infinity)
    res = data["results"]
    assert res["games"] == 4 == len(data["games"])
    assert res["wins"] + res["draws"] + res["losses"] == 4
    assert sum(res["pentanomial"]) == 2  # two complete pairs
    assert data["engine_b"]["options"] == {"Threads": "1", "Hash": "16"}
    games = data["games"]
    # paired openings: game 2k and 2k+1 share the opening and swap colours
    assert games[0]["opening"] == games[1]["opening"] != games[2]["opening"]
    assert [g["a_white"] for g in games] == [True, False, True, False]
    for g in games:
        assert g["termination"] in (TERM_NORMAL, TERM_ADJUDICATION), g["reason"]

    handle = io.StringIO(pgn_path.read_text())
    parsed = [chess.pgn.read_game(handle) for _ in range(4)]
    assert all(parsed) and chess.pgn.read_game(handle) is None
    for game in parsed:
        for tag in ("Event", "Site", "Date", "Round", "White", "Black", "Result", "TimeControl"):
            assert game.headers[tag] not in ("", "?"), tag
        assert game.headers["Termination"] in (TERM_NORMAL, TERM_ADJUDICATION)
        assert game.headers["White"] != game.headers["Black"]  # same engine: names told apart
        nodes = list(game.mainline())
        assert nodes[0].comment == "book"
        engine_moves = [n.comment for n in nodes if n.comment != "book"]
        assert re.match(r"^([+-]\d+\.\d\d|[+-]M\d+)/\d+ \d+\.\d{3}s", engine_moves[0])
        assert game.end().board().fen() != chess.STARTING_FEN


@pytest.mark.skipif(
    importlib.util.find_spec("oneply.engine.uci.engine") is None, reason="engine.uci missing"
)
def test_oneply_uci_vs_stockfish_skill_0() -> None:
    command = (sys.executable, "-m", "oneply.engine", "uci")
    oneply = EngineSpec(command, (("Threads", "1"),), TimeControl(nodes=1))
    sf = stockfish(200, (("Skill Level", "0"),))
    result = run_match(settings(oneply, sf, 2))
    assert len(result.games) == 2
    for game in result.games:
        assert game.termination in (TERM_NORMAL, TERM_ADJUDICATION), game.reason
        assert game.plies > 8
    assert "oneply" in result.names[0].lower()
    assert_all_exited(result.pids)


# --------------------------------------------------------------------------- misbehaving engines


@pytest.mark.parametrize(
    ("mode", "termination", "reason", "tc"),
    [
        ("crash", TERM_ABANDONED, "crashed (exit code 3)", None),
        ("illegal", TERM_ILLEGAL, "illegal move", None),
        ("hang", TERM_TIME, "loses on time: no move in 2.00s", None),
        ("hang", TERM_TIME, "loses on time", TimeControl(base=0.5, inc=0.0)),
    ],
)
def test_misbehaving_engine_loses(
    mode: str, termination: str, reason: str, tc: TimeControl | None
) -> None:
    # Stockfish always plays on nodes (a clock this short could flag it too on a loaded machine);
    # only the misbehaving engine gets the clock under test
    sf = stockfish(200)
    bad = bad_engine(mode, after=3, tc=tc)
    start = time.monotonic()
    result = run_match(settings(bad, sf, 2, move_timeout=2.0))
    assert time.monotonic() - start < 30
    assert len(result.games) == 2  # the match finished
    for game in result.games:
        assert game.score_a == 0.0, game.reason
        assert game.termination == termination
        assert reason in game.reason
        assert "misbehaving" in game.reason
        assert f'[Termination "{termination}"]' in game.pgn
    assert result.stats["losses"] == 2
    assert_all_exited(result.pids)


def test_engine_that_never_starts_is_reported_and_killed() -> None:
    pids: list[int] = []
    spec = bad_engine("nostart")
    with pytest.raises(EngineStartError, match="no answer within 1s"):
        asyncio.run(identify(spec, 1.0, pids))
    assert_all_exited(pids)


def test_missing_binary_is_a_start_error() -> None:
    spec = EngineSpec(("/nonexistent/engine",))
    with pytest.raises(EngineStartError, match="cannot run"):
        asyncio.run(identify(spec, 1.0, []))


def test_misbehaving_engine_restarted_every_game() -> None:
    # crash on the 2nd move of *each* process: every game needs a fresh engine, all are losses
    good = bad_engine("random", after=0)
    crash = bad_engine("crash", after=2)
    result = run_match(settings(good, crash, 4, concurrency=1, resign_moves=0))
    assert [g.score_a for g in sorted(result.games, key=lambda g: g.index)] == [1.0] * 4
    assert all("crashed" in g.reason for g in result.games)
    assert_all_exited(result.pids)


def test_sprt_stops_early() -> None:
    # Stockfish vs a random mover: every pair is 2-0, so the GSPRT accepts H1 long before 40 games
    random_mover = bad_engine("random", after=0)
    result = run_match(
        settings(stockfish(500), random_mover, 40, sprt=(0.0, 50.0, 0.05, 0.05), resign_moves=2)
    )
    assert result.stopped_by_sprt == "H1"
    assert len(result.games) < 40
    assert result.stats["sprt"]["llr"] >= result.stats["sprt"]["upper"]
    assert_all_exited(result.pids)


# --------------------------------------------------------------------------- pieces


def test_parse_tc() -> None:
    assert match.parse_tc("10+0.1") == TimeControl(base=10.0, inc=0.1)
    assert match.parse_tc("1:00+0.6") == TimeControl(base=60.0, inc=0.6)
    assert match.parse_tc("60").inc == 0.0
    assert match.parse_tc("10+0.1").pgn_tag() == "10+0.1"
    assert TimeControl(nodes=5).pgn_tag() == "-"
    with pytest.raises(argparse.ArgumentTypeError):
        match.parse_tc("0+1")


def test_parse_option_keeps_spaces_in_names() -> None:
    assert match.parse_option("Skill Level=3") == ("Skill Level", "3")
    with pytest.raises(argparse.ArgumentTypeError):
        match.parse_option("Threads")


def test_openings_from_book_epd_and_pgn(tmp_path: Path) -> None:
    book = load_openings(BOOK, 5, 8, seed=1)
    assert len(book) == 5 and len({o.moves for o in book}) == 5
    assert all(len(o.moves) == 8 for o in book)
    assert book == load_openings(BOOK, 5, 8, seed=1)  # fixed seed → same openings

    epd = tmp_path / "o.epd"
    epd.write_text(
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "king pawn";\n\n'
        "8/8/8/4k3/8/8/4P3/4K3 w - -\n"
    )
    ops = load_openings(str(epd), 2, None, seed=1, order="sequential")
    assert [o.name for o in ops] == ["king pawn", None]
    assert ops[1].board().piece_at(chess.E2) == chess.Piece(chess.PAWN, chess.WHITE)

    eco = load_openings(ECO, 3, 4, seed=1)
    assert len(eco) > 1000 and all(0 < len(o.moves) <= 4 for o in eco)
    assert all(o.name and o.name[0] in "ABCDE" for o in eco[:20])


def test_scoreboard_pairs_in_any_order() -> None:
    def rec(index: int, result: str) -> GameRecord:
        a_white = index % 2 == 0
        return GameRecord(index, index // 2, a_white, "w", "b", result, "", "", 0, 0.0, {})

    board = Scoreboard()
    # game 1 (A black) finishes before game 0; game 3 is still running
    for index, result in ((1, "0-1"), (0, "1/2-1/2"), (2, "1-0")):
        board.add(rec(index, result))
    assert board.wdl() == (2, 1, 0)  # A won game 1 as Black and game 2 as White
    assert board.pairs() == [0, 0, 0, 1, 0]  # pair 0: ½ + 1 = 1½ points; pair 1 incomplete
    board.add(rec(3, "*"))
    assert board.pairs() == [0, 0, 0, 1, 0] and board.wdl() == (2, 1, 0)


def test_threefold_only_when_it_happens() -> None:
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"):
        board.push_uci(uci)
    # Black *could* claim by repeating now; the game is not over until it does
    assert rules_outcome(board) is None
    board.push_uci("f6g8")
    over = rules_outcome(board)
    assert over is not None and over.result == "1/2-1/2" and over.reason == "threefold repetition"


def test_eval_streak_needs_both_engines() -> None:
    streak = EvalStreak(threshold=500, moves=2)
    for cp in (600, 700, 800):
        streak.push(cp)
    assert streak.winner() is None  # only 3 plies
    streak.push(900)
    assert streak.winner() == chess.WHITE
    streak.push(-100)  # one engine disagrees
    assert streak.winner() is None


def test_adjudicator_finds_stockfish_by_name_on_path(
    stockfish: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--adjudicator stockfish` (a name on PATH, not a file here) must adjudicate."""
    monkeypatch.setenv("PATH", os.path.dirname(stockfish) + os.pathsep + os.environ["PATH"])
    pids: list[int] = []

    async def evaluate() -> int | None:
        adjudicator = Adjudicator(os.path.basename(stockfish), 2000, pids, 10.0)
        try:
            return await adjudicator.white_cp(chess.Board("4k3/8/8/8/8/8/8/Q3K3 w - - 0 1"))
        finally:
            await adjudicator.close()

    cp = asyncio.run(evaluate())
    assert cp is not None and cp > 500
    assert_all_exited(pids)


def test_format_comment() -> None:
    info = {"score": chess.engine.PovScore(chess.engine.Cp(35), chess.WHITE), "depth": 12}
    assert format_comment(info, 0.1042) == "+0.35/12 0.104s"
    mate = {"score": chess.engine.PovScore(chess.engine.Mate(-3), chess.BLACK)}
    assert format_comment(mate, 1.0) == "-M3 1.000s"
    assert format_comment({}, 0.5) == "0.500s"


def _syzygy_dir() -> str | None:
    """3–4-piece tables if some are on this machine (python-chess's source ships them)."""
    candidates = [os.environ.get("ONEPLY_SYZYGY", "")]
    candidates += sorted(glob.glob("/tmp/pip-*/chess_*/data/syzygy/regular"))
    return next((c for c in candidates if c and glob.glob(os.path.join(c, "KQvK.rtbw"))), None)


@pytest.mark.skipif(_syzygy_dir() is None, reason="no Syzygy tables here")
def test_tablebase_adjudication() -> None:
    tablebase = open_tablebase(_syzygy_dir())
    try:
        win = tablebase_outcome(chess.Board("8/8/8/4k3/8/8/8/3QK3 b - - 0 1"), tablebase)
        assert win is not None and win.result == "1-0" and win.reason == "tablebase win"
        draw = tablebase_outcome(chess.Board("4k3/8/8/8/8/8/4P3/4K3 b - - 0 1"), tablebase)
        assert draw is not None and draw.result == "1/2-1/2"
        many = chess.Board()  # 32 pieces: not probed
        assert tablebase_outcome(many, tablebase) is None
    finally:
        tablebase.close()


def _children(pid: int) -> list[int]:
    kids = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                kids.append(int(Path(stat).parent.name))
    return kids


def test_sigterm_stops_engines_even_a_hung_one() -> None:
    # engines run in their own process groups, so the runner must stop them itself; the hung
    # engine would not even exit on end-of-input like Stockfish does
    command = [
        sys.executable,
        "-m",
        "oneply.engine",
        "match",
        f"{sys.executable} {BAD_ENGINE} hang 1",
    ]
    command += [stockfish_path(), "--nodes=1000", "--games=20", "--concurrency=2", "--quiet"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while len(kids := _children(proc.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(kids) >= 4, "match did not start its engines"
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 130
    finally:
        proc.kill()
        proc.wait()
    assert_all_exited(kids)

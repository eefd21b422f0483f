"""The graceful stop of a real `oneply bot` process against the fake Lichess server: the first
SIGTERM finishes the running game (and aborts one still in its first moves), declines new
challenges and exits 0; a second SIGTERM exits at once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.lichess_server import FakeLichess, idle_opponent


def slow_opponent(seed: int, delay: float = 0.25):
    rng = random.Random(seed)

    def move(board: chess.Board) -> str:
        time.sleep(delay)
        return rng.choice(list(board.legal_moves)).uci()

    return move


def plies(server: FakeLichess, game_id: str) -> int:
    game = server.games.get(game_id)
    return 0 if game is None else len(game.moves)


@pytest.fixture
def server():
    fake = FakeLichess().start()
    yield fake
    fake.stop()


class BotProcess:
    """`oneply bot` in a subprocess, its log collected line by line."""

    def __init__(self, server: FakeLichess, tmp_path: Path, **sections):
        config = {
            "url": server.url,
            "token": "good-token",
            "pgn_directory": str(tmp_path / "games"),
            "abort_time": 60.0,
            "http": {"read_timeout": 2, "backoff_base": 0.05, "backoff_max": 0.3},
            "rate_limit": {"pause_429": 0.3},
            "engine": {"fallback": "random", "threads": 1},
            **sections,
        }
        path = tmp_path / "config.yml"
        path.write_text(yaml.safe_dump(config))
        env = {**os.environ, "ONEPLY_HEARTBEAT": str(tmp_path / "heartbeat")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "oneply.engine", "bot", "--config", str(path)],
            cwd=REPO,
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def log(self) -> str:
        return "\n".join(self.lines)

    def wait_log(self, fragment: str, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if fragment in self.log():
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def bot_process(server, tmp_path):
    started: list[BotProcess] = []

    def start(**sections) -> BotProcess:
        process = BotProcess(server, tmp_path, **sections)
        started.append(process)
        assert process.wait_log("event=connected", timeout=90), process.log()
        assert server.wait_for(lambda: server.event_connections >= 1, timeout=10)
        return process

    yield start
    for process in started:
        process.close()


def test_first_sigterm_finishes_the_game_aborts_the_new_one_and_declines(server, bot_process):
    bot = bot_process(shutdown={"timeout": 120})
    playing = server.challenge(color="white", opponent=slow_opponent(1), resign_at_ply=15)
    fresh = server.challenge(color="black", opponent=idle_opponent)  # no first move yet
    assert server.wait_for(lambda: plies(server, playing) >= 4, timeout=60)
    assert fresh in server.games and not server.games[fresh].moves
    bot.proc.send_signal(signal.SIGTERM)
    assert bot.wait_log("event=shutdown_requested", timeout=10), bot.log()
    late = server.challenge(color="white")
    assert bot.proc.wait(timeout=90) == 0, bot.log()
    game = server.games[playing]
    assert game.status == "resign" and len(game.moves) == 15  # played to its end
    assert server.games[fresh].status == "aborted"
    assert server.accepted == [playing, fresh]  # nothing accepted after the signal
    assert server.declined == {late: "later"}
    log = bot.log()
    assert f"event=abort game={fresh} reason=shutdown" in log
    assert f"event=game_end game={playing} status=resign" in log
    assert "event=shutdown_done" in log and "Traceback" not in log


def test_second_sigterm_exits_at_once(server, bot_process):
    bot = bot_process(shutdown={"timeout": 120})
    playing = server.challenge(color="white", opponent=slow_opponent(2), resign_at_ply=400)
    assert server.wait_for(lambda: plies(server, playing) >= 4, timeout=60)
    bot.proc.send_signal(signal.SIGTERM)
    assert bot.wait_log("event=shutdown_requested", timeout=10), bot.log()
    time.sleep(0.5)
    assert bot.proc.poll() is None  # still draining: the game goes on
    moves = len(server.games[playing].moves)
    bot.proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    code = bot.proc.wait(timeout=10)
    assert time.monotonic() - sent < 3, bot.log()
    assert code == 128 + signal.SIGTERM
    assert server.games[playing].status == "started" and moves >= 4
    assert "event=shutdown_forced" in bot.log() and "Traceback" not in bot.log()


def test_drain_bound_leaves_the_game_and_exits(server, bot_process):
    bot = bot_process(shutdown={"timeout": 1.0})
    playing = server.challenge(color="white", opponent=slow_opponent(3), resign_at_ply=400)
    assert server.wait_for(lambda: plies(server, playing) >= 2, timeout=60)
    bot.proc.send_signal(signal.SIGINT)  # Ctrl-C: the same drain
    assert bot.proc.wait(timeout=20) == 0, bot.log()
    assert server.games[playing].status == "started"
    assert f"games_left={playing}" in bot.log()


def test_sigterm_while_lichess_is_unreachable_exits_at_once(tmp_path):
    closed = FakeLichess().start()
    closed.stop()  # nothing listens at its address any more
    bot = BotProcess(
        closed, tmp_path, http={"connect_timeout": 0.2, "backoff_base": 0.05, "backoff_max": 0.2}
    )
    try:
        assert bot.wait_log("event=lichess_unreachable", timeout=90), bot.log()
        bot.proc.send_signal(signal.SIGTERM)
        assert bot.proc.wait(timeout=10) == 0, bot.log()
        assert "Traceback" not in bot.log()
    finally:
        bot.close()

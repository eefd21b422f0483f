"""The harness for the bot's end-to-end tests: the real bot code and the real berserk client
against the fake Lichess server in tests/helpers/lichess_server.py (no mocks of berserk or
requests). A test config, the bot running on a thread, and what a test waits for and checks when
a game ends; shared by the bot's test modules (the fixtures are in tests/bot/conftest.py)."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import chess
import chess.pgn

from oneply.bot.config import parse_config
from oneply.bot.main import Bot
from tests.helpers.lichess_server import FakeGame, FakeLichess


def make_config(server: FakeLichess, tmp_path: Path, **sections):
    """Test timings: everything small, so that each scenario takes a few seconds."""
    data = {
        "url": server.url,
        "token": "good-token",
        "pgn_directory": str(tmp_path / "games"),
        "abort_time": 20.0,
        "http": {
            "connect_timeout": 2,
            "read_timeout": 0.8,
            "backoff_base": 0.05,
            "backoff_max": 0.3,
        },
        "rate_limit": {"pause_429": 0.3},
        "engine": {"fallback": "random"},
        "greeting": {"hello": "hi {opponent}, I am {me}", "goodbye": "gg {opponent}"},
    }
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return parse_config(data, env={})


@contextlib.contextmanager
def running_bot(config, scorer, server: FakeLichess):
    bot = Bot(config, scorer=scorer)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            bot.run()
        except BaseException as error:  # surfaced in the test below
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield bot
    finally:
        bot.stop()
        server.push_event({"type": "wake"})  # unblock the event stream so the loop sees stop
        thread.join(5)
    assert not errors, errors


def finished(server: FakeLichess, game_id: str) -> bool:
    game = server.games.get(game_id)
    return game is not None and game.status != "started"


def wait_pgn(config, game_id: str, timeout: float = 10.0) -> chess.pgn.Game:
    path = Path(config.pgn_directory) / f"{game_id}.pgn"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with path.open() as handle:
        return chess.pgn.read_game(handle)


def ended_as_scripted(game: FakeGame, resign_at_ply: int) -> bool:
    """The scripted opponent resigned at its ply, unless the bot mated it first: the model is
    strong enough to mate a random mover, so an early mate (up to the very ply the opponent
    would have resigned at) is a bot win, not a lost game."""
    bot_won = game.winner == ("white" if game.bot_color == chess.WHITE else "black")
    resigned = game.status == "resign" and len(game.moves) == resign_at_ply
    mated = game.status == "mate" and len(game.moves) <= resign_at_ply  # its last ply may mate
    return bot_won and (resigned or mated)

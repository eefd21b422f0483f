"""The bot's connection to Lichess under faults, against the fake Lichess server: dropped and
stalled streams resumed, 429s on move and chat, a rejected move, games found after a reconnect,
backoff when the server is unreachable or an event is bad, and the heartbeat of the stream."""

from __future__ import annotations

import logging
import os
import threading
import time

import chess
import pytest

from oneply.bot.config import parse_config
from oneply.bot.lichess import Backoff
from oneply.bot.main import Bot
from oneply.engine.health import check_heartbeat
from tests.bot.harness import ended_as_scripted, finished, make_config, running_bot, wait_pgn
from tests.helpers.lichess_server import FakeLichess, random_opponent

pytestmark = pytest.mark.usefixtures("private_heartbeat")


def test_backoff_grows_with_jitter_and_caps():
    backoff = Backoff(0.1, 1.0)
    delays = [backoff.next_delay() for _ in range(8)]
    assert 0.05 <= delays[0] < 0.1 and delays[1] >= 0.1 and max(delays) <= 1.0


def test_game_stream_dropped_mid_game_is_resumed(server, tmp_path, scorer):
    config = make_config(server, tmp_path)
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=17)
        server.drop_game_stream_at_ply[game_id] = 6
        assert server.wait_for(lambda: finished(server, game_id), timeout=20)
        pgn = wait_pgn(config, game_id)
    assert server.game_connections[game_id] >= 2
    game = server.games[game_id]
    assert ended_as_scripted(game, 17)  # or the bot mated the random mover first
    assert [m.uci() for m in pgn.mainline_moves()] == game.moves
    assert all(status == 200 for _, status in server.hits("POST", "/move/"))


def test_stalled_event_stream_reconnects(server, tmp_path, scorer):
    server.stall_event_stream = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(resign_at_ply=2)
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
    assert server.event_connections >= 2


def test_429_on_move_pauses_the_endpoint(server, tmp_path, scorer):
    server.move_429 = 1
    server.move_429_retry_after = 1  # longer than the configured 0.3 s: the response wins
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=7)
        assert server.wait_for(lambda: finished(server, game_id), timeout=15)
    hits = server.hits("POST", "/move/")
    assert [s for _, s in hits].count(429) == 1
    first, second = hits[0], hits[1]
    assert first[1] == 429 and second[0] - first[0] >= 1.0
    assert len(server.games[game_id].moves) == 7


def test_429_on_move_pauses_every_concurrent_game_and_none_loses(server, tmp_path, scorer):
    """Lichess counts the account: after a 429 on `move` no game may post a move before the
    pause is over (it would only earn another 429), and every game goes on afterwards."""
    server.move_429 = 1
    server.move_429_retry_after = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        ids = [
            server.challenge(color="white", opponent=random_opponent(1), resign_at_ply=9),
            server.challenge(color="black", opponent=random_opponent(2), resign_at_ply=8),
            server.challenge(color="white", opponent=random_opponent(3), resign_at_ply=7),
        ]
        assert server.wait_for(lambda: all(finished(server, i) for i in ids), timeout=20)
    hits = server.hits("POST", "/move/")
    limited = [t for t, status in hits if status == 429]
    # moves already in flight when the first 429 was sent are refused too; none after that
    assert 1 <= len(limited) <= len(ids), hits
    assert all(t < limited[0] or t - limited[0] >= 1.0 for t, status in hits if status == 200)
    plies = [9, 8, 7]
    assert all(ended_as_scripted(server.games[i], n) for i, n in zip(ids, plies, strict=True))


def test_429_on_chat_does_not_hold_up_concurrent_games(server, tmp_path, scorer):
    """Every game greets before its first move: a paused chat endpoint must not make them
    wait out the pause (with Lichess's 60 s, bullet games would be lost on time)."""
    server.chat_429 = 1
    config = make_config(server, tmp_path, rate_limit={"pause_429": 30})
    with running_bot(config, scorer, server):
        ids = [
            server.challenge(color="white", opponent=random_opponent(1), resign_at_ply=9),
            server.challenge(color="black", opponent=random_opponent(2), resign_at_ply=8),
            server.challenge(color="white", opponent=random_opponent(3), resign_at_ply=7),
        ]
        assert server.wait_for(lambda: all(finished(server, i) for i in ids), timeout=10)
    assert [s for _, s in server.hits("POST", "/chat")].count(429) == 1
    plies = [9, 8, 7]
    assert all(ended_as_scripted(server.games[i], n) for i, n in zip(ids, plies, strict=True))


def test_rejected_move_resyncs_from_server(server, tmp_path, scorer):
    server.reject_moves = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=7)
        assert server.wait_for(lambda: finished(server, game_id), timeout=15)
    assert server.game_connections[game_id] >= 2
    assert len(server.games[game_id].moves) == 7


def test_ongoing_game_is_picked_up_at_start(server, tmp_path, scorer):
    game = server.start_game("ongoing1", chess.BLACK, random_opponent(3), announce=False)
    game.resign_at_ply = 10
    with running_bot(make_config(server, tmp_path), scorer, server):
        assert server.wait_for(lambda: finished(server, "ongoing1"), timeout=15)
        # a game that starts while the event stream is down is found after the reconnect
        assert server.wait_for(lambda: server.event_connections == 1)
        missed = server.start_game("missed1", chess.WHITE, random_opponent(4), announce=False)
        missed.resign_at_ply = 7
        server.drop_event_stream = 1
        assert server.wait_for(lambda: finished(server, "missed1"), timeout=15)
    assert len(game.moves) == 10 and len(missed.moves) == 7
    assert server.event_connections >= 2


def test_bad_event_does_not_reset_the_backoff_or_break_the_stream(server, tmp_path, scorer):
    config = make_config(server, tmp_path)
    with running_bot(config, scorer, server) as bot:
        server.push_event({"type": "gameStart", "game": "not-a-mapping"})
        good = server.challenge(color="white", resign_at_ply=3)
        assert server.wait_for(lambda: good in server.accepted, timeout=10)
    assert server.event_connections == 1 and bot is not None


def test_unreachable_server_retries_with_capped_backoff_and_no_traceback(tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    closed = FakeLichess().start()
    url = closed.url
    closed.stop()  # nothing listens there any more
    config = parse_config(
        {
            "url": url,
            "token": "good-token",
            "rate_limit": {"pause_429": 1},
            "http": {"connect_timeout": 0.2, "backoff_base": 0.05, "backoff_max": 0.2},
        },
        env={},
    )
    bot = Bot(config, scorer=scorer)
    thread = threading.Thread(target=bot.run, daemon=True)
    thread.start()
    time.sleep(3)
    bot.stop()
    thread.join(5)
    assert not thread.is_alive()
    lines = [r.getMessage() for r in caplog.records if "lichess_unreachable" in r.getMessage()]
    assert len(lines) >= 3 and url in lines[0]
    delays = [float(line.split("retry_in_s=")[1].split()[0]) for line in lines]
    assert max(delays) <= 0.2


def test_heartbeat_follows_the_event_stream(server, tmp_path, scorer, monkeypatch):
    """The health check's view of the bot: the heartbeat file is kept fresh while the event
    stream is connected, and a file left silent is reported unhealthy."""
    beat = tmp_path / "heartbeat"
    monkeypatch.setenv("ONEPLY_HEARTBEAT", str(beat))
    with running_bot(make_config(server, tmp_path), scorer, server) as bot:
        bot.heartbeat.interval = 0.05
        assert server.wait_for(lambda: bot.heartbeat.alive.is_set(), timeout=5)
        assert beat.exists()
        first = beat.stat().st_mtime_ns
        assert server.wait_for(lambda: beat.stat().st_mtime_ns > first, timeout=5)
        assert check_heartbeat(beat, max_age=5).startswith("bot event stream alive")
    os.utime(beat, (1, 1))  # long silent
    with pytest.raises(RuntimeError, match="silent"):
        check_heartbeat(beat, max_age=60)

"""Matchmaking against the fake Lichess server: a challenge after the idle time to an eligible
online bot, back-off from a bot that declined, and nothing while max_games are running."""

from __future__ import annotations

import logging
import time

import pytest

from oneply.bot.config import ConfigError, parse_config
from oneply.bot.matchmaking import speed_of
from tests.bot.harness import finished, make_config, running_bot
from tests.helpers.lichess_server import BOT, idle_opponent

pytestmark = pytest.mark.usefixtures("private_heartbeat")

#: idle for 0.6 s, then at most one challenge every 0.2 s
FAST = {
    "allow_matchmaking": True,
    "challenge_timeout": 0.01,
    "challenge_interval": 0.2,
    "challenge_initial_time": [180],
    "challenge_increment": [2],
    "challenge_mode": "casual",
    "opponent_min_rating": 1000,
    "opponent_max_rating": 2500,
}


def test_challenges_an_eligible_bot_after_the_idle_time(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    server.add_online_bot("WeakBot", rating=700)  # below opponent_min_rating
    server.add_online_bot("BlockedBot", rating=1800)
    server.add_online_bot(BOT, rating=2000)  # ourselves
    server.add_online_bot("GoodBot", rating=1800, answer="accept")
    server.matchmade_game_options = {"resign_at_ply": 6}
    config = make_config(server, tmp_path, matchmaking={**FAST, "block_list": ["blockedbot"]})
    started = time.monotonic()
    with running_bot(config, scorer, server):
        assert server.wait_for(lambda: server.outgoing, timeout=15)
        waited = time.monotonic() - started
        game_id = server.outgoing[0]["id"]
        assert server.wait_for(lambda: finished(server, game_id), timeout=20)
    first = server.outgoing[0]
    assert waited >= 0.6
    assert first["username"] == "GoodBot" and str(first["rated"]).lower() == "false"
    assert (first["clock.limit"], first["clock.increment"]) == (180, 2)
    assert server.games[game_id].status == "resign"  # the accepted challenge was played
    assert all(c["username"] == "GoodBot" for c in server.outgoing)
    assert f"event=matchmaking_challenge id={game_id} opponent=GoodBot clock=180+2" in caplog.text
    assert f"event=matchmaking_accepted id={game_id}" in caplog.text


def test_a_bot_that_declined_is_left_alone(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    server.add_online_bot("GrumpyBot", rating=1500, answer="tooFast")
    config = make_config(server, tmp_path, matchmaking={**FAST, "decline_delay": 10})
    with running_bot(config, scorer, server):
        assert server.wait_for(lambda: "event=matchmaking_declined" in caplog.text, timeout=15)
        time.sleep(1.5)  # several intervals: GrumpyBot is not asked again
        assert [c["username"] for c in server.outgoing] == ["GrumpyBot"]
        assert "event=matchmaking_no_opponent" in caplog.text
        server.add_online_bot("FriendlyBot", rating=1500, answer="ignore")
        assert server.wait_for(lambda: len(server.outgoing) == 2, timeout=10)
    assert "opponent=GrumpyBot reason=tooFast back_off_min=10" in caplog.text
    assert server.outgoing[1]["username"] == "FriendlyBot"


def test_an_unanswered_challenge_is_cancelled_and_backed_off(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    server.add_online_bot("SleepyBot", rating=1500, answer="ignore")
    config = make_config(server, tmp_path, matchmaking={**FAST, "challenge_expiry": 1})
    with running_bot(config, scorer, server):
        assert server.wait_for(lambda: server.canceled, timeout=15)
        time.sleep(1.0)
    assert server.canceled == [server.outgoing[0]["id"]] and len(server.outgoing) == 1
    assert "opponent=SleepyBot reason=expired" in caplog.text


def test_no_challenge_while_max_games_are_running(server, tmp_path, scorer):
    server.add_online_bot("GoodBot", rating=1800)
    config = make_config(server, tmp_path, matchmaking=FAST, challenge={"max_games": 1})
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="black", opponent=idle_opponent)  # lasts 20 s
        assert server.wait_for(lambda: game_id in server.games)
        time.sleep(2.5)  # idle time and intervals pass, but the one game slot is taken
        assert server.outgoing == [] and not finished(server, game_id)


def test_matchmaking_config_is_checked():
    assert not parse_config({}, env={}).matchmaking.allow_matchmaking  # off by default
    with pytest.raises(ConfigError, match="UltraBullet"):
        parse_config(
            {"matchmaking": {"challenge_initial_time": [15], "challenge_increment": [0]}}, env={}
        )
    with pytest.raises(ConfigError, match="'matchmaking.challenge_mode' must be one of"):
        parse_config({"matchmaking": {"challenge_mode": "sometimes"}}, env={})
    with pytest.raises(ConfigError, match="at most matchmaking.opponent_max_rating"):
        parse_config(
            {"matchmaking": {"opponent_min_rating": 3000, "opponent_max_rating": 2000}}, env={}
        )
    with pytest.raises(ConfigError, match="'matchmaking.challenge_increment' must be"):
        parse_config({"matchmaking": {"challenge_increment": "2"}}, env={})
    assert [speed_of(60, 0), speed_of(180, 2), speed_of(600, 5)] == ["bullet", "blitz", "rapid"]

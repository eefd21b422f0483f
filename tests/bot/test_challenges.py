"""Challenges to the bot, against the fake Lichess server: which are accepted and which are
declined (and why) per the challenge filter, a 500 on accept retried, and challenges the bot
cannot read declined without breaking the event stream (issue 13)."""

from __future__ import annotations

import time

import pytest

from oneply.bot.challenges import decline_reason
from oneply.bot.config import ChallengeConfig
from tests.bot.harness import finished, make_config, running_bot
from tests.helpers.lichess_server import idle_opponent

pytestmark = pytest.mark.usefixtures("private_heartbeat")


def test_decline_reasons_unit():
    config = ChallengeConfig(humans=False, allow_list=["friend"])
    human = {"challenger": {"id": "friend"}, "speed": "blitz", "timeControl": {"limit": 180}}
    assert decline_reason(human, config, 0) == "onlyBot"
    stranger = {"challenger": {"id": "x", "title": "BOT"}, "speed": "blitz"}
    assert decline_reason(stranger, config, 0) == "generic"


def test_challenges_accepted_and_declined_per_filter(server, tmp_path, scorer):
    config = make_config(
        server,
        tmp_path,
        challenge={
            "speeds": ["blitz", "rapid"],
            "max_base": 900,
            "modes": ["casual"],
            "bots": False,
            "min_rating": 1000,
            "max_rating": 2500,
            "block_list": ["troll"],
            "max_games": 1,
        },
    )
    with running_bot(config, scorer, server):
        accepted = server.challenge(color="black", opponent=idle_opponent)
        assert server.wait_for(lambda: accepted in server.games)
        expected = {
            server.challenge(variant="chess960"): "variant",
            server.challenge(variant="fromPosition", initial_fen="8/8/8/8/8/8/8/K6k w - - 0 1"): (
                "standard"
            ),
            server.challenge(speed="bullet", limit=60, increment=0): "tooFast",
            server.challenge(speed="rapid", limit=1800, increment=0): "tooSlow",
            server.challenge(correspondence=True): "tooSlow",
            server.challenge(rated=True): "casual",
            server.challenge(challenger="somebot", title="BOT"): "noBot",
            server.challenge(rating=800): "generic",
            server.challenge(challenger="troll"): "generic",
            server.challenge(): "later",  # max_games=1 and one game is running
        }
        assert server.wait_for(lambda: len(server.declined) == len(expected))
    assert server.accepted == [accepted]
    assert server.declined == expected


def test_500_on_accept_is_retried(server, tmp_path, scorer):
    server.accept_500 = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(resign_at_ply=4)
        assert server.wait_for(lambda: finished(server, game_id))
    assert [status for _, status in server.hits("POST", "/accept")] == [500, 200]


def test_unreadable_challenges_are_declined_and_the_stream_is_kept(server, tmp_path, scorer):
    """An unknown speed or a non-numeric rating once killed the event stream; Lichess replayed
    the challenge on reconnect and the bot looped forever, never answering the queue."""
    server.replay_pending_challenges = True
    config = make_config(server, tmp_path, challenge={"max_games": 1})
    with running_bot(config, scorer, server):
        bad_speed = server.challenge(speed="hyperBullet")
        bad_rating = server.challenge(rating="strong")  # type: ignore[arg-type]
        bad_clock = server.challenge(limit="soon")  # type: ignore[arg-type]
        good = server.challenge(color="white", resign_at_ply=3)
        assert server.wait_for(lambda: good in server.accepted, timeout=10)
        time.sleep(1.0)  # a looping bot would reconnect many times in this second
    assert server.declined == {bad_speed: "generic", bad_rating: "generic", bad_clock: "generic"}
    assert server.event_connections <= 2

"""Chat commands against the fake Lichess server: each built-in command's reply in the player
and spectator rooms, !eval for spectators only, the rate limit, clipping, operators' commands."""

from __future__ import annotations

import logging

import pytest

from oneply.bot.chat import COMMANDS, ChatContext, clip, command
from oneply.bot.config import ConfigError, parse_config
from tests.bot.harness import make_config, running_bot
from tests.helpers.lichess_server import FakeLichess, idle_opponent

pytestmark = pytest.mark.usefixtures("private_heartbeat")


def replies(server: FakeLichess, game_id: str, room: str) -> list[str]:
    return [text for gid, r, text in server.chat if gid == game_id and r == room]


def ask(server: FakeLichess, game_id: str, text: str, room: str = "player") -> str:
    """Say `text` and wait for the bot's next line in that room."""
    before = len(replies(server, game_id, room))
    server.say(game_id, text, room=room, username="human1" if room == "player" else "watcher")
    assert server.wait_for(lambda: len(replies(server, game_id, room)) > before, timeout=10), text
    return replies(server, game_id, room)[before]


def start_game(server: FakeLichess) -> str:
    game_id = server.challenge(color="white", opponent=idle_opponent)
    assert server.wait_for(lambda: game_id in server.games and server.games[game_id].moves)
    assert server.wait_for(lambda: len(replies(server, game_id, "spectator")) >= 1)  # hello
    return game_id


def test_each_command_replies_in_its_rooms(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    config = make_config(server, tmp_path, chat={"reply_interval": 0})
    with running_bot(config, scorer, server):
        game_id = start_game(server)
        assert ask(server, game_id, "!help") == "Commands: !help !name !queue !games"
        assert ask(server, game_id, "!help", "spectator") == (
            "Commands: !help !name !eval !queue !games"
        )
        name = ask(server, game_id, "!name")
        assert name.startswith("OneplyBot runs oneply") and "oneply-small.onnx" in name
        assert "M parameters" in name
        assert ask(server, game_id, "!eval") == "!eval is answered in the spectator room only"
        evaluation = ask(server, game_id, "!EVAL please", "spectator")
        assert evaluation.startswith("Black to move: expected win ") and "Top: " in evaluation
        assert len(evaluation.split("Top: ")[1].split(", ")) == 3
        assert ask(server, game_id, "!queue") == (
            "Playing 1 of 4 games; challenges are answered at once (over the limit: declined, "
            "later). Matchmaking: off."
        )
        assert ask(server, game_id, "!games", "spectator") == f"Playing 1: {game_id} vs Human1"
        before = len(server.chat)
        server.say(game_id, "!nosuchcommand")
        server.say(game_id, "good luck!")
        assert ask(server, game_id, "!name")  # answered: the two lines above were not
        assert len(server.chat) == before + 1
    assert all(len(text) <= 140 for _, _, text in server.chat)
    assert (
        f"event=chat_command game={game_id} room=spectator user=watcher command=eval" in caplog.text
    )


def test_replies_are_rate_limited_per_room_and_clipped(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")

    @command("essay", "a reply far too long for a chat line")
    def essay(context: ChatContext) -> str:
        return "word " * 100

    try:
        config = make_config(server, tmp_path, chat={"reply_interval": 30})
        with running_bot(config, scorer, server):
            game_id = start_game(server)
            first = ask(server, game_id, "!essay")
            assert len(first) == 140 and first.endswith("…")
            server.say(game_id, "!name")  # within 30 s of the last reply in this room
            assert ask(server, game_id, "!name", "spectator")  # the other room has its own
            assert server.wait_for(lambda: "reason=rate_limited" in caplog.text)
            assert len(replies(server, game_id, "player")) == 1 + 1  # hello + the essay
    finally:
        del COMMANDS["essay"]


def test_chat_config_is_checked(tmp_path):
    with pytest.raises(ConfigError, match="'chat.eval_rooms' must be player and/or spectator"):
        parse_config({"chat": {"eval_rooms": ["everyone"]}}, env={})
    with pytest.raises(ConfigError, match="'chat.modules': cannot import 'no_such_module_h23'"):
        parse_config({"chat": {"modules": ["no_such_module_h23"]}}, env={})
    with pytest.raises(ConfigError, match="'chat.reply_interval' must be between"):
        parse_config({"chat": {"reply_interval": -1}}, env={})
    assert clip("a  b\nc") == "a b c"


def test_what_is_not_a_command_gets_no_reply():
    from oneply.bot.chat import Conversation
    from oneply.bot.config import ChatConfig

    def context(args):
        raise AssertionError("no context is built for a line that is not answered")

    chat = Conversation(ChatConfig(reply_interval=0), me="OneplyBot")
    for room, user, text in [
        ("player", "OneplyBot", "!help"),  # our own line, echoed back
        ("player", "human1", "!"),
        ("player", "human1", "!nosuch"),
        ("player", "human1", "help"),
        ("lobby", "human1", "!help"),
    ]:
        assert chat.reply("g1", room, user, text, context) is None
    off = Conversation(ChatConfig(commands=False), me="OneplyBot")
    assert off.reply("g1", "player", "human1", "!help", context) is None

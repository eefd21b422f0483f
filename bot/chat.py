"""Chat commands in a game's player and spectator rooms: the registry and each game's replies.

A command is one entry in `COMMANDS`, made with the `command` decorator: its name (typed as
`!name`), a one-line help, the rooms it answers in, and a function from the context to the
reply. The built-in commands live in bot/commands.py; an operator adds one in a module of their
own, listed under config.yml's `chat.modules`, which the bot imports at start-up:

    from oneply.bot.chat import ChatContext, command

    @command("ping", "answers pong")
    def ping(context: ChatContext) -> str:
        return f"pong, {context.username}"

Replies are rate-limited per game and room (`chat.reply_interval`: a command that comes sooner
is logged and not answered) and clipped to Lichess's 140 characters. Lines the bot wrote itself
are never read as commands.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import chess

from oneply.bot.config import ChatConfig
from oneply.bot.config_checks import MAX_CHAT
from oneply.engine.play.inference import MoveScore

log = logging.getLogger("oneply.bot")

ROOMS = ("player", "spectator")


@dataclass(frozen=True)
class Activity:
    """What the bot is doing, for !games and !queue."""

    games: list[tuple[str, str]]  # (game id, opponent)
    max_games: int
    draining: bool = False
    matchmaking: str = "off"


@dataclass
class ChatContext:
    """What a command may read: the game's position, who asked where, and the bot."""

    game_id: str
    board: chess.Board
    room: str
    username: str
    args: list[str]
    me: str
    engine: str  # the !name line: engine, model, parameter count
    score: Callable[[chess.Board], list[MoveScore]]
    activity: Callable[[], Activity]
    config: ChatConfig = field(default_factory=ChatConfig)


Reply = Callable[[ChatContext], str]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    reply: Reply
    #: the rooms it answers in; None: those of config.yml (`chat.<name>_rooms` where there is
    #: one, else both)
    rooms: tuple[str, ...] | None = None


#: every command by name: the built-ins (bot/commands.py) and the operator's own
COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, rooms: Sequence[str] | None = None) -> Callable[[Reply], Reply]:
    """Register `!name` (a later registration of the same name replaces the earlier one, so
    an operator can redefine a built-in)."""
    if not name.isidentifier() or name.lower() != name:
        raise ValueError(f"chat command names are lower-case words, got {name!r}")

    def register(reply: Reply) -> Reply:
        COMMANDS[name] = Command(name, help, reply, None if rooms is None else tuple(rooms))
        return reply

    return register


def clip(text: str, limit: int = MAX_CHAT) -> str:
    """One line within Lichess's chat limit."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def rooms_of(cmd: Command, config: ChatConfig) -> tuple[str, ...]:
    if cmd.rooms is not None:
        return cmd.rooms
    if cmd.name == "eval":
        return tuple(config.eval_rooms)
    return ROOMS


class Conversation:
    """One game's chat: which lines are commands, whether to answer now, and the reply."""

    def __init__(self, config: ChatConfig, me: str, clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.me = me.lower()
        self.clock = clock
        self._last_reply: dict[str, float] = {}

    def parse(self, room: str, username: str, text: str) -> tuple[Command, list[str]] | None:
        """The command a line asks for, or None (not a command, unknown, or our own line)."""
        if not self.config.commands or username.lower() == self.me or room not in ROOMS:
            return None
        words = text.strip().split()
        if not words or not words[0].startswith("!") or len(words[0]) < 2:
            return None
        cmd = COMMANDS.get(words[0][1:].lower())
        return None if cmd is None else (cmd, words[1:])

    def reply(
        self,
        game_id: str,
        room: str,
        username: str,
        text: str,
        context: Callable[[list[str]], ChatContext],
    ) -> str | None:
        """The reply to one chat line, or None. `context` builds the command's context (only
        for a command that is answered: building it may cost a model call)."""
        parsed = self.parse(room, username, text)
        if parsed is None:
            return None
        cmd, args = parsed
        now = self.clock()
        last = self._last_reply.get(room)
        if last is not None and now - last < self.config.reply_interval:
            log.info(
                "event=chat_command_dropped game=%s room=%s command=%s reason=rate_limited",
                game_id,
                room,
                cmd.name,
            )
            return None
        if room not in rooms_of(cmd, self.config):
            where = " and ".join(rooms_of(cmd, self.config))
            answer = f"!{cmd.name} is answered in the {where} room only"
        else:
            try:
                answer = cmd.reply(context(args))
            except Exception as error:  # an operator's command must not break the game
                log.warning(
                    "event=chat_command_failed game=%s command=%s error=%r",
                    game_id,
                    cmd.name,
                    error,
                )
                answer = f"!{cmd.name} failed, sorry"
        self._last_reply[room] = now
        log.info(
            "event=chat_command game=%s room=%s user=%s command=%s",
            game_id,
            room,
            username,
            cmd.name,
        )
        return clip(answer) if answer else None

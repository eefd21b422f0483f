"""The built-in chat commands, one entry each (the registry is bot/chat.py's COMMANDS).

`!help`, `!name`, `!eval` (spectators only by default, as in lichess-bot: the opponent gets no
advice), `!queue` and `!games`. Importing this module registers them.
"""

from __future__ import annotations

import math
from typing import Any

import chess

from oneply.bot.chat import COMMANDS, ChatContext, command, rooms_of
from oneply.bot.config import BotConfig


@command("help", "the commands answered here")
def help_(context: ChatContext) -> str:
    here = [name for name, cmd in COMMANDS.items() if context.room in rooms_of(cmd, context.config)]
    names = [f"!{name}" for name in here]
    return "Commands: " + " ".join(names)


@command("name", "the engine, its model and parameter count")
def name(context: ChatContext) -> str:
    return f"{context.me} runs {context.engine}"


@command("eval", "the model's expected win and top three moves here")
def eval_(context: ChatContext) -> str:
    board = context.board
    if board.is_game_over():
        return "The game is over: nothing to evaluate."
    scores = context.score(board)
    side = "White" if board.turn == chess.WHITE else "Black"
    top = ", ".join(f"{board.san(s.move)} {100 * s.win:.0f}%" for s in scores[:3])
    win = 100 * scores[0].win
    return f"{side} to move: expected win {win:.0f}% for {side} (the model, no search). Top: {top}"


@command("queue", "games running and how challenges are answered")
def queue(context: ChatContext) -> str:
    activity = context.activity()
    if activity.draining:
        return f"Shutting down: finishing {len(activity.games)} game(s), no new challenges."
    return (
        f"Playing {len(activity.games)} of {activity.max_games} games; challenges are answered "
        f"at once (over the limit: declined, later). Matchmaking: {activity.matchmaking}."
    )


@command("games", "the games being played now")
def games(context: ChatContext) -> str:
    activity = context.activity()
    if not activity.games:
        return "No games now."
    listed = ", ".join(f"{game_id} vs {opponent}" for game_id, opponent in activity.games)
    return f"Playing {len(activity.games)}: {listed}"


def describe_engine(scorer: Any, config: BotConfig) -> str:
    """What !name says: the engine, the model file and its parameter count."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        engine = f"oneply {version('oneply')}"
    except PackageNotFoundError:
        engine = "oneply"
    info = getattr(scorer, "info", None)
    if info is None:
        return f"{engine} ({type(scorer).__name__})"
    try:
        from oneply.engine.model.architecture import parameters

        count = sum(math.prod(p.shape) for p in parameters(info.config))
        size = f", {count / 1e6:.2f}M parameters"
    except (KeyError, TypeError, ValueError):
        size = ""
    how = (
        "with look-ahead" if config.engine.search.enabled else "one forward pass a move, no search"
    )
    return f"{engine}, model {info.name} ({info.preset}{size}), {how}"

"""Typed shapes of the Lichess payloads the bot reads (as lichess-bot does with TypedDicts).

Only the keys the bot uses; `total=False` because Lichess omits keys freely (a challenger
without a rating, a correspondence game without a clock). These are for the type checker:
values still arrive from the network and the code still checks them (bot/challenges.py
declines what it cannot read).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict


class Player(TypedDict, total=False):
    id: str
    name: str
    title: str | None
    rating: int


class Variant(TypedDict, total=False):
    key: str


class TimeControl(TypedDict, total=False):
    type: str  # clock | correspondence | unlimited
    limit: int  # seconds
    increment: int  # seconds


class Challenge(TypedDict, total=False):
    id: str
    direction: str  # in | out
    challenger: Player
    variant: Variant
    speed: str
    timeControl: TimeControl
    rated: bool
    initialFen: str


class GameRef(TypedDict, total=False):
    gameId: str
    id: str


class Event(TypedDict, total=False):
    """A line of /api/stream/event."""

    type: str  # challenge | gameStart | gameFinish | challengeCanceled | challengeDeclined
    challenge: Challenge
    game: GameRef


class Account(TypedDict, total=False):
    id: str
    username: str
    title: str
    perfs: dict[str, Any]  # speed -> {"rating": ..., "games": ...}


#: a clock as it arrives: int milliseconds (gameFull's state) or, through berserk, a timedelta
Clock = int | dt.timedelta


class GameState(TypedDict, total=False):
    """A gameState line of /api/bot/game/stream, and the ``state`` of a gameFull."""

    type: str  # gameState
    moves: str  # every move so far, UCI, space-separated
    wtime: Clock
    btime: Clock
    winc: Clock
    binc: Clock
    status: str  # started, mate, resign, ... (bot/game.py RUNNING)
    winner: str  # white | black
    wdraw: bool  # white offers a draw
    bdraw: bool


class GameFull(TypedDict, total=False):
    """The first line of a game stream (and of each reconnection): the game as it stands."""

    type: str  # gameFull
    id: str
    white: Player
    black: Player
    initialFen: str  # a FEN, or "startpos"
    rated: bool
    speed: str
    state: GameState


class ChatLine(TypedDict, total=False):
    """A chatLine of a game stream."""

    type: str  # chatLine
    room: str  # player | spectator
    username: str
    text: str


class GameEvent(GameFull, GameState, ChatLine, total=False):
    """A line of a game stream: gameFull, gameState, chatLine or opponentGone, by ``type``
    (each kind has only its own keys)."""

    gone: bool  # opponentGone: whether the opponent left
    claimWinInSeconds: int

"""Typed shapes of the Lichess payloads the bot reads (as lichess-bot does with TypedDicts).

Only the keys the bot uses; `total=False` because Lichess omits keys freely (a challenger
without a rating, a correspondence game without a clock). These are for the type checker:
values still arrive from the network and the code still checks them (bot/challenges.py
declines what it cannot read).
"""

from __future__ import annotations

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


#: gameFull / gameState / chatLine lines of a game stream (read with .get throughout)
GameEvent = dict[str, Any]

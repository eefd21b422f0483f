"""Which challenges to accept: config.yml's `challenge` section → accept, or Lichess's reason.

The reasons are berserk's `ChallengeDeclineReason` keys, which Lichess shows the challenger
translated ("This bot doesn't accept rated games"), so the reason should say what to change.
"""

from __future__ import annotations

from typing import Any

import chess

from oneply.bot.config import ChallengeConfig
from oneply.bot.payloads import Challenge

SPEED_ORDER = ["ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence"]


def _variant_reason(challenge: Challenge, config: ChallengeConfig) -> str | None:
    variant = (challenge.get("variant") or {}).get("key", "standard")
    if variant not in config.variants:
        return "standard" if config.variants == ["standard"] else "variant"
    if variant == "fromPosition" and not legal_start(challenge.get("initialFen")):
        return "standard"
    return None


def legal_start(fen: str | None) -> bool:
    """A fromPosition FEN that is a legal standard-chess position with a move to play."""
    if not fen or fen == "startpos":
        return True
    try:
        board = chess.Board(fen)
    except ValueError:
        return False
    return board.is_valid() and not board.is_game_over()


def _speed_reason(challenge: Challenge, config: ChallengeConfig) -> str | None:
    control = challenge.get("timeControl") or {}
    if control.get("type") in ("correspondence", "unlimited"):
        return None if config.correspondence else "tooSlow"
    speed = challenge.get("speed", "blitz")
    if speed not in SPEED_ORDER:
        return "generic"  # a speed this version does not know: nothing to compare it with
    if speed not in config.speeds:
        allowed = [SPEED_ORDER.index(s) for s in config.speeds if s in SPEED_ORDER]
        faster = bool(allowed) and SPEED_ORDER.index(speed) < min(allowed)
        return "tooFast" if faster else "tooSlow"
    base, increment = control.get("limit", 0), control.get("increment", 0)
    if not (_is_number(base) and _is_number(increment)):
        return "generic"
    if base < config.min_base or increment < config.min_increment:
        return "tooFast"
    if base > config.max_base or increment > config.max_increment:
        return "tooSlow"
    return None


def _player_reason(challenge: Challenge, config: ChallengeConfig) -> str | None:
    challenger = challenge.get("challenger") or {}
    name = str(challenger.get("id") or challenger.get("name") or "").lower()
    if name in {n.lower() for n in config.block_list}:
        return "generic"
    if config.allow_list and name not in {n.lower() for n in config.allow_list}:
        return "generic"
    is_bot = challenger.get("title") == "BOT"
    if is_bot and not config.bots:
        return "noBot"
    if not is_bot and not config.humans:
        return "onlyBot"
    rating = challenger.get("rating")
    if rating is not None and not _is_number(rating):
        return "generic"  # cannot be checked against the limits
    if rating is not None and not config.min_rating <= rating <= config.max_rating:
        return "generic"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _mode_reason(challenge: Challenge, config: ChallengeConfig) -> str | None:
    mode = "rated" if challenge.get("rated") else "casual"
    if mode in config.modes:
        return None
    return "casual" if mode == "rated" else "rated"


def decline_reason(challenge: Challenge, config: ChallengeConfig, active_games: int) -> str | None:
    """None to accept the challenge, else the berserk decline reason. A challenge that
    cannot be understood (a new speed, a rating that is not a number, a malformed field) is
    declined with `generic`: it must never stop the event stream that brought it."""
    checks = (_player_reason, _variant_reason, _speed_reason, _mode_reason)
    for check in checks:
        try:
            reason = check(challenge, config)
        except (AttributeError, KeyError, TypeError, ValueError):
            return "generic"
        if reason:
            return reason
    if active_games >= config.max_games:
        return "later"
    return None

"""Matchmaking (off by default): when the bot has been idle long enough, challenge an online bot.

As lichess-bot's `matchmaking:` section: after `challenge_timeout` minutes without a game
starting or ending and without an incoming challenge, pick a bot from /api/bot/online whose
rating for the chosen time control is within the configured range (and, when set, within
`opponent_rating_difference` of ours), not blocked and not backing off, and challenge it to a
random one of the configured clocks, rated or casual as `challenge_mode` says. One challenge
is outstanding at a time; one unanswered for `challenge_expiry` seconds is cancelled. A bot that
declines (or lets the challenge expire) is left alone for `decline_delay` minutes, and the
reason is logged. New challenges wait `challenge_interval` seconds after the last one, and a
429 pauses the endpoint (bot/lichess.py). Nothing is sent while (games + the outstanding
challenge) reach `challenge.max_games`, or once the bot is shutting down.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oneply.bot.config import BotConfig
from oneply.bot.lichess import Lichess, RateLimited

log = logging.getLogger("oneply.bot")


def speed_of(limit: int, increment: int) -> str:
    """Lichess's speed for a clock: the estimated duration limit + 40 × increment."""
    duration = limit + 40 * increment
    if duration < 30:
        return "ultraBullet"
    if duration < 180:
        return "bullet"
    if duration < 480:
        return "blitz"
    if duration < 1500:
        return "rapid"
    return "classical"


@dataclass
class Pending:
    challenge_id: str
    opponent: str
    created: float


class Matchmaker:
    """Decides when and whom to challenge; `tick` runs in the bot's matchmaking thread."""

    def __init__(
        self,
        config: BotConfig,
        lichess: Lichess,
        active_games: Callable[[], int],
        my_rating: Callable[[str], int | None] = lambda speed: None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.mm = config.matchmaking
        self.lichess = lichess
        self.active_games = active_games
        self.my_rating = my_rating
        self.clock = clock
        self.rng = rng or random.Random()
        self.last_activity = clock()
        self.last_challenge: float | None = None
        self.pending: Pending | None = None
        self.backing_off: dict[str, tuple[float, str]] = {}  # bot → (until, reason)
        # answers that may arrive on the event stream before the challenge's POST returns
        self._answers: dict[str, str] = {}  # challenge id → "accepted" or the decline reason
        self._lock = threading.Lock()

    # -- what the event stream tells us -----------------------------------------------------

    def note_activity(self) -> None:
        """A game started or ended, or a challenge came in: the bot is not idle."""
        self.last_activity = self.clock()

    def on_game_start(self, game_id: str) -> None:
        with self._lock:
            if self.pending and self.pending.challenge_id == game_id:
                log.info(
                    "event=matchmaking_accepted id=%s opponent=%s", game_id, self.pending.opponent
                )
                self.pending = None
            else:
                self._remember(game_id, "accepted")
        self.note_activity()

    def _remember(self, challenge_id: str, answer: str) -> None:
        self._answers[challenge_id] = answer
        while len(self._answers) > 100:
            del self._answers[next(iter(self._answers))]

    def on_declined(self, challenge: dict[str, Any]) -> None:
        reason = str(
            challenge.get("declineReasonKey") or challenge.get("declineReason") or "generic"
        )
        with self._lock:
            if not self.pending or self.pending.challenge_id != challenge.get("id"):
                self._remember(str(challenge.get("id")), reason)
                return
            self._back_off(self.pending.opponent, reason)
            self.pending = None

    def _back_off(self, opponent: str, reason: str) -> None:
        until = self.clock() + 60 * self.mm.decline_delay
        self.backing_off[opponent.lower()] = (until, reason)
        log.info(
            "event=matchmaking_declined opponent=%s reason=%s back_off_min=%g",
            opponent,
            reason,
            self.mm.decline_delay,
        )

    # -- the decision ---------------------------------------------------------------------------

    def due(self) -> bool:
        """Idle long enough, room for a game, and the last challenge long enough ago."""
        now = self.clock()
        if self.pending is not None:
            return False
        if self.active_games() >= self.config.challenge.max_games:
            return False
        if now - self.last_activity < 60 * self.mm.challenge_timeout:
            return False
        since = None if self.last_challenge is None else now - self.last_challenge
        return since is None or since >= self.mm.challenge_interval

    def tick(self) -> None:
        """Expire an unanswered challenge, or send one when due."""
        with self._lock:
            pending = self.pending
            if pending and self.clock() - pending.created >= self.mm.challenge_expiry:
                self.pending = None
                self._back_off(pending.opponent, "expired")
        if pending and self.pending is None:
            try:
                self.lichess.cancel_challenge(pending.challenge_id)
            except Exception as error:
                log.warning(
                    "event=matchmaking_cancel_failed id=%s error=%r", pending.challenge_id, error
                )
            return
        if not self.due():
            return
        self.challenge()

    def choose(self, bots: list[dict[str, Any]], speed: str) -> str | None:
        """A random eligible bot's username, or None."""
        now = self.clock()
        me = self.lichess.username.lower()
        blocked = {n.lower() for n in (*self.mm.block_list, *self.config.challenge.block_list)}
        mine = self.my_rating(speed)
        eligible = []
        for bot in bots:
            name = str(bot.get("username") or bot.get("id") or "")
            key = name.lower()
            if not name or key == me or key in blocked or bot.get("title") != "BOT":
                continue
            if bot.get("tosViolation") or bot.get("disabled"):
                continue
            until, _ = self.backing_off.get(key, (0.0, ""))
            if until > now:
                continue
            rating = ((bot.get("perfs") or {}).get(speed) or {}).get("rating")
            if not isinstance(rating, int) or isinstance(rating, bool):
                continue
            if not self.mm.opponent_min_rating <= rating <= self.mm.opponent_max_rating:
                continue
            difference = self.mm.opponent_rating_difference
            if difference is not None and mine is not None and abs(rating - mine) > difference:
                continue
            eligible.append(name)
        return self.rng.choice(eligible) if eligible else None

    def challenge(self) -> None:
        limit = self.rng.choice(self.mm.challenge_initial_time)
        increment = self.rng.choice(self.mm.challenge_increment)
        speed = speed_of(limit, increment)
        mode = self.mm.challenge_mode
        rated = self.rng.choice([True, False]) if mode == "random" else mode == "rated"
        self.last_challenge = self.clock()  # a failed attempt also waits the interval
        try:
            bots = self.lichess.online_bots(self.mm.online_bots_limit)
            opponent = self.choose(bots, speed)
            if opponent is None:
                log.info("event=matchmaking_no_opponent online=%d speed=%s", len(bots), speed)
                return
            challenge_id = self.lichess.create_challenge(
                opponent, rated, limit, increment, self.mm.challenge_variant
            )
        except RateLimited as error:
            log.warning("event=matchmaking_rate_limited pause_s=%.1f", error.seconds)
            return
        except Exception as error:
            log.warning("event=matchmaking_failed error=%r", error)
            return
        with self._lock:
            answer = self._answers.pop(challenge_id, None)
            if answer is None:
                self.pending = Pending(challenge_id, opponent, self.clock())
        log.info(
            "event=matchmaking_challenge id=%s opponent=%s clock=%d+%d speed=%s rated=%s",
            challenge_id,
            opponent,
            limit,
            increment,
            speed,
            str(rated).lower(),
        )
        if answer == "accepted":
            log.info("event=matchmaking_accepted id=%s opponent=%s", challenge_id, opponent)
        elif answer is not None:
            with self._lock:
                self._back_off(opponent, answer)

    def run(self, stop: Callable[[], bool], wait: Callable[[float], object]) -> None:
        """The matchmaking thread: a tick every half second until `stop()`."""
        log.info(
            "event=matchmaking_on idle_min=%g clocks=%s+%s mode=%s",
            self.mm.challenge_timeout,
            self.mm.challenge_initial_time,
            self.mm.challenge_increment,
            self.mm.challenge_mode,
        )
        while not stop():
            try:
                self.tick()
            except Exception as error:  # never let matchmaking take the bot down
                log.warning("event=matchmaking_failed error=%r", error)
            wait(0.5)

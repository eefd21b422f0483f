"""The Lichess client: berserk over a requests session with timeouts, 429 pauses and retries.

berserk sets no timeouts and never retries, so this wrapper adds what a bot that runs for days
needs: (connect, read) timeouts on every request (the read timeout doubles as stall detection
for streams), a per-endpoint pause after HTTP 429 (Lichess asks for at least 60 s), and
retries with exponential backoff and jitter on connection errors and 5xx responses.
The token goes into the Authorization header only; it is never logged.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import berserk
import requests
import requests.adapters
from berserk.exceptions import ApiError, ResponseError

from oneply.bot.config import BotConfig
from oneply.bot.payloads import Account, Event, GameEvent

log = logging.getLogger("oneply.bot")
# berserk logs request bodies at DEBUG; /api/token/test sends the token in the body.
logging.getLogger("berserk").setLevel(logging.INFO)

T = TypeVar("T")

#: errors worth retrying: the network, a stream that broke or stalled
NETWORK_ERRORS = (requests.RequestException, ConnectionError, TimeoutError)


EVENT_STREAM_PATH = "/api/stream/event"


class SetupError(RuntimeError):
    """The token or account cannot run a bot; the message says how to fix it."""


class RateLimited(RuntimeError):
    """An endpoint answered HTTP 429; it is paused for `seconds`."""

    def __init__(self, endpoint: str, seconds: float):
        super().__init__(f"HTTP 429 on {endpoint}: paused {seconds:.1f} s")
        self.endpoint = endpoint
        self.seconds = seconds


class TimeoutSession(requests.Session):
    """A requests session whose every request has (connect, read) timeouts and the token."""

    def __init__(self, token: str, connect_timeout: float, read_timeout: float):
        super().__init__()
        self.timeout = (connect_timeout, read_timeout)
        # one long-lived stream per game plus the event stream: more than requests' default 10
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=64)
        self.mount("http://", adapter)
        self.mount("https://", adapter)
        self.headers["Authorization"] = f"Bearer {token}"
        self.headers["User-Agent"] = "oneply-bot"

    # a pass-through: requests' own signature is too long to repeat for one default
    def request(  # type: ignore[override]
        self, method: str, url: str, *args: Any, **kwargs: Any
    ) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout)
        response = super().request(method, url, *args, **kwargs)
        response.json = types.MethodType(_stdlib_json, response)  # type: ignore[method-assign]
        return response


def _stdlib_json(response: requests.Response, **kwargs: Any) -> Any:
    """`Response.json` on the standard library's json module.

    requests decodes with simplejson whenever it is installed (orbax-checkpoint, in the `dm`
    extra, pulls it in), and berserk passes a standard-library decoder class (`cls=`) that
    simplejson instantiates with an `encoding` argument it does not take: every JSON reply
    would raise TypeError. Decoding with the module berserk was written for avoids that.
    """
    return json.loads(response.content.decode(response.encoding or "utf-8"), **kwargs)


class Backoff:
    """Exponential backoff with jitter: base·2^n capped at `cap`, times a random factor in
    [0.5, 1) so that many clients (or games) do not retry in lock-step.

    The exponent stops growing once the cap is reached: a bot retrying through a day-long
    outage must not overflow a float (2.0**1025 did, after about 13 hours at a 60 s cap)."""

    def __init__(self, base: float, cap: float, rng: random.Random | None = None):
        self.base, self.cap = base, cap
        self.attempt = 0
        self.rng = rng or random.Random()
        # an exponent at which base * 2**n is past the cap (computed in logarithms:
        # cap / base itself overflows for a tiny base)
        self.last_attempt = max(0, math.ceil(math.log2(cap) - math.log2(base)) + 1)

    def next_delay(self) -> float:
        uncapped = math.ldexp(self.base, self.attempt)  # at most 4 * cap: never overflows
        self.attempt = min(self.attempt + 1, self.last_attempt)
        return min(self.cap, uncapped) * (0.5 + 0.5 * self.rng.random())

    def reset(self) -> None:
        """After a success: the next failure waits `base` again, not the last delay."""
        self.attempt = 0


def status_of(error: BaseException) -> int | None:
    """The HTTP status of a berserk error, None for network errors."""
    return error.status_code if isinstance(error, ResponseError) else None


def is_transient(error: BaseException) -> bool:
    """Worth retrying: network trouble or a server error (5xx)."""
    status = status_of(error)
    if status is not None:
        return status >= 500
    return isinstance(error, (ApiError, *NETWORK_ERRORS))


def retry_after(error: ResponseError) -> float:
    """Seconds a 429 response asks us to wait: Retry-After header or Lichess's JSON
    `ratelimit.seconds`; 0 when it says nothing."""
    seconds = 0.0
    header = error.response.headers.get("Retry-After", "")
    if header.strip().isdigit():
        seconds = float(header)
    cause = error.cause if isinstance(error.cause, dict) else {}
    ratelimit = cause.get("ratelimit")
    if isinstance(ratelimit, dict) and isinstance(ratelimit.get("seconds"), int | float):
        seconds = max(seconds, float(ratelimit["seconds"]))
    return seconds


class Lichess:
    """Every Lichess call the bot makes, each named by its endpoint for 429 bookkeeping."""

    def __init__(self, config: BotConfig, rng: random.Random | None = None):
        self.config = config
        self.session = TimeoutSession(
            config.token, config.http.connect_timeout, config.http.read_timeout
        )
        self.client = berserk.Client(session=self.session, base_url=config.url.rstrip("/"))
        self.rng = rng or random.Random()
        self._paused_until: dict[str, float] = {}
        self._lock = threading.Lock()
        self.username = ""

    # -- rate limits and retries ------------------------------------------------------------

    def backoff(self) -> Backoff:
        return Backoff(self.config.http.backoff_base, self.config.http.backoff_max, self.rng)

    def pause_left(self, endpoint: str) -> float:
        with self._lock:
            return max(0.0, self._paused_until.get(endpoint, 0.0) - time.monotonic())

    def _pause(self, endpoint: str, error: ResponseError) -> float:
        seconds: float = max(self.config.rate_limit.pause_429, retry_after(error))
        with self._lock:
            self._paused_until[endpoint] = time.monotonic() + seconds
        log.warning("event=rate_limited endpoint=%s pause_s=%.1f", endpoint, seconds)
        return seconds

    def call(self, endpoint: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """One call: waits out a pause of this endpoint first, pauses it on HTTP 429."""
        wait = self.pause_left(endpoint)
        if wait > 0:
            time.sleep(wait)
        try:
            return fn(*args, **kwargs)
        except ResponseError as error:
            if error.status_code == 429:
                raise RateLimited(endpoint, self._pause(endpoint, error)) from error
            raise

    def retrying(
        self, endpoint: str, fn: Callable[..., T], *args: Any, attempts: int = 6, **kwargs: Any
    ) -> T:
        """`call` again after a 429 pause, and after network errors or 5xx with backoff;
        client errors (4xx) are raised at once because repeating them cannot help."""
        backoff = self.backoff()
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                return self.call(endpoint, fn, *args, **kwargs)
            except RateLimited:
                if last:
                    raise
            except Exception as error:
                if last or not is_transient(error):
                    raise
                delay = backoff.next_delay()
                log.warning(
                    "event=retry endpoint=%s status=%s error=%s delay_s=%.2f",
                    endpoint,
                    status_of(error),
                    type(error).__name__,
                    delay,
                )
                time.sleep(delay)
        raise AssertionError("unreachable")

    # -- start-up checks ----------------------------------------------------------------------

    def check_token(self) -> dict[str, Any]:
        """The token's info from /api/token/test; SetupError unless it has bot:play."""
        if not self.config.token:
            raise SetupError(
                "no Lichess token: set LICHESS_BOT_TOKEN (or `token` in config.yml) to a token "
                "with scope bot:play (https://lichess.org/account/oauth/token/create)"
            )
        try:
            info = self.retrying("token", self.client.oauth.test_tokens, self.config.token)
        except ResponseError as error:
            raise SetupError(f"cannot check the token at {self.config.url}: {error}") from None
        entry: dict[str, Any] | None = info.get(self.config.token)  # berserk is untyped
        if not entry:
            raise SetupError(
                "the Lichess token is not valid (mistyped, expired or revoked); create a new "
                "one with scope bot:play and set LICHESS_BOT_TOKEN"
            )
        scopes = str(entry.get("scopes") or "").split(",")
        if "bot:play" not in scopes:
            raise SetupError(
                "the Lichess token lacks scope bot:play "
                f"(it has: {entry.get('scopes') or 'none'}); "
                "create a token with bot:play and set LICHESS_BOT_TOKEN"
            )
        return entry

    def account(self) -> Account:
        try:
            account = cast(Account, self.retrying("account", self.client.account.get))
        except ResponseError as error:
            if error.status_code == 401:
                raise SetupError("Lichess rejected the token (HTTP 401); check it") from None
            raise
        self.username = account.get("username") or account.get("id", "")
        return account

    def check_bot_account(self) -> Account:
        """Token with bot:play and a BOT account, or a SetupError that says what to do."""
        self.check_token()
        account = self.account()
        if account.get("title") != "BOT":
            raise SetupError(
                f"account {self.username!r} is not a BOT account; run `oneply bot --upgrade` "
                "to upgrade it (irreversible, only for accounts that never played a game)"
            )
        return account

    def upgrade(self) -> None:
        self.call("upgrade", self.client.account.upgrade_to_bot)

    # -- streams ------------------------------------------------------------------------------

    def _stream(self, endpoint: str, fn: Callable[..., Iterator[T]], *args: Any) -> Iterator[T]:
        """berserk's streams are generators that send the request on the first next(), so
        the 429 bookkeeping of `call` has to live inside the iteration."""
        wait = self.pause_left(endpoint)
        if wait > 0:
            time.sleep(wait)
        try:
            yield from fn(*args)
        except ResponseError as error:
            if error.status_code == 429:
                raise RateLimited(endpoint, self._pause(endpoint, error)) from error
            raise

    def on_event_stream_open(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever the event stream's response arrives (HTTP 2xx): berserk
        only yields events, so this is how the bot learns the stream is connected."""

        def hook(response: requests.Response, *args: Any, **kwargs: Any) -> None:
            if response.ok and response.url.endswith(EVENT_STREAM_PATH):
                callback()

        self.session.hooks["response"].append(hook)

    def stream_events(self) -> Iterator[Event]:
        """Challenges and game starts; a stall (no keep-alive within the read timeout) raises
        a requests ConnectionError while iterating."""
        events = cast(Callable[[], Iterator[Event]], self.client.bots.stream_incoming_events)
        return self._stream("event_stream", events)

    def stream_game(self, game_id: str) -> Iterator[GameEvent]:
        """The game's lines (gameFull first, then gameState, chatLine, opponentGone)."""
        lines = cast(Callable[[str], Iterator[GameEvent]], self.client.bots.stream_game_state)
        return self._stream("game_stream", lines, game_id)

    def ongoing_games(self) -> list[dict[str, Any]]:
        return self.retrying("playing", self.client.games.get_ongoing, 50)

    # -- actions ------------------------------------------------------------------------------

    def move(self, game_id: str, uci: str) -> None:
        self.retrying("move", self.client.bots.make_move, game_id, uci)

    def accept(self, challenge_id: str) -> None:
        self.retrying("challenge", self.client.bots.accept_challenge, challenge_id)

    def decline(self, challenge_id: str, reason: str) -> None:
        self.retrying("challenge", self.client.bots.decline_challenge, challenge_id, reason)

    def chat(self, game_id: str, text: str, spectator: bool = False) -> None:
        """Chat is courtesy: while the endpoint is paused after a 429 the message is skipped,
        never waited for, because games greet from their own thread before their first move
        and a 60 s wait there would lose bullet games on time."""
        if self.pause_left("chat") > 0:
            log.info("event=chat_skipped game=%s reason=rate_limited", game_id)
            return
        self.call("chat", self.client.bots.post_message, game_id, text, spectator)

    # -- matchmaking ----------------------------------------------------------------------------

    def online_bots(self, limit: int) -> list[dict[str, Any]]:
        """The bots online now (/api/bot/online, NDJSON read to its end)."""
        return self.retrying("online_bots", lambda: list(self.client.bots.get_online_bots(limit)))

    def create_challenge(
        self, username: str, rated: bool, limit: int, increment: int, variant: str
    ) -> str:
        """Challenge `username`; the new challenge's id. Not retried: a second POST after a
        lost reply would send a second challenge."""
        create = self.client.challenges.create
        reply = self.call(
            "challenge_create", create, username, rated, limit, increment, variant=variant
        )
        challenge = reply.get("challenge", reply) if isinstance(reply, dict) else {}
        return str(challenge.get("id") or "")

    def cancel_challenge(self, challenge_id: str) -> None:
        self.retrying("challenge", self.client.challenges.cancel, challenge_id)

    def abort(self, game_id: str) -> None:
        self.retrying("abort", self.client.bots.abort_game, game_id)

    def resign(self, game_id: str) -> None:
        self.retrying("resign", self.client.bots.resign_game, game_id)

    def accept_draw(self, game_id: str) -> None:
        """berserk 0.14 has no bot draw call; POST /api/bot/game/{id}/draw/yes through its
        requestor so the same session, timeouts and errors apply."""
        post = self.client.bots._r.post  # noqa: SLF001 - berserk lacks this bot endpoint
        self.retrying("draw", post, f"/api/bot/game/{game_id}/draw/yes")

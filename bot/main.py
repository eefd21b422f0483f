"""`oneply bot`: play on Lichess as a BOT account, configured by config.yml.

One thread follows the account's event stream (challenges, game starts) and answers
challenges; each game runs in its own thread (bot/game.py); one inference worker batches the
positions of all games (bot/batcher.py). On start-up and after every reconnect of the event
stream, games already in progress are picked up from /api/account/playing. The main thread
supervises: it notices a fatal error of the event thread, and on SIGTERM/Ctrl-C it drains
(bot/shutdown.py): no new challenges, games in their first moves aborted, the others finished
within `shutdown.timeout`; a second signal exits at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from berserk.exceptions import ResponseError

from oneply.bot.batcher import InferenceBatcher
from oneply.bot.book import BookAndTables
from oneply.bot.challenges import decline_reason
from oneply.bot.chat import Activity
from oneply.bot.commands import describe_engine
from oneply.bot.config import (
    TOKEN_ENV,
    BotConfig,
    ConfigError,
    load_config,
    startup_warnings,
    write_default_config,
)
from oneply.bot.game import Game, Services
from oneply.bot.lichess import Lichess, RateLimited, SetupError, is_transient, status_of
from oneply.bot.matchmaking import Matchmaker
from oneply.bot.payloads import Account, Challenge, Event
from oneply.bot.shutdown import StopRequest
from oneply.engine.health import Heartbeat
from oneply.engine.model.model_file import ModelFileError
from oneply.engine.play.fallback import Fallback
from oneply.engine.play.inference import MoveScorer
from oneply.engine.play.policy import MovePolicy
from oneply.engine.stockfish import find_stockfish

log = logging.getLogger("oneply.bot")


def policy_factory(config: BotConfig) -> Callable[[], MovePolicy]:
    """A function that makes one MovePolicy per game from `engine.policy` (checked when
    config.yml was loaded); each game gets its own copy of the settings."""
    return lambda: MovePolicy(dataclasses.replace(config.engine.policy))


class Bot:
    """The event loop: challenges in, one thread per game out."""

    def __init__(
        self, config: BotConfig, scorer: MoveScorer | None = None, lichess: Lichess | None = None
    ):
        self.config = config
        self.lichess = lichess or Lichess(config)
        self.scorer = scorer
        self.stop_event = threading.Event()
        self.stopping = StopRequest()
        self.fatal: BaseException | None = None  # what ended the event thread, for run()
        self._aborted_on_stop: set[str] = set()
        self.games: dict[str, tuple[Game, threading.Thread]] = {}
        self.accepted: set[str] = set()
        self.finished: deque[Game] = deque(maxlen=100)  # recent games, for inspection
        self._lock = threading.Lock()
        self.services: Services | None = None
        self.heartbeat = Heartbeat()
        self.account: Account = {}
        self.matchmaker = Matchmaker(config, self.lichess, self.active_games, self.my_rating)
        self.lichess.on_event_stream_open(self.heartbeat.alive.set)

    # -- set-up -------------------------------------------------------------------------------

    def start_services(self) -> Services:
        new_policy = policy_factory(self.config)
        if self.scorer is None:
            from oneply.engine.play.inference import Scorer  # onnxruntime loads only when we play

            self.scorer = Scorer(self.config.engine.model, self.config.engine.threads)
        info = getattr(self.scorer, "info", None)
        log.info(
            "event=model_loaded model=%s provider=%s",
            info.describe() if info is not None else type(self.scorer).__name__,
            getattr(self.scorer, "provider", "?"),  # a silent CPU fallback must be visible
        )
        engine = self.config.engine
        if engine.search.enabled and getattr(self.scorer, "predictor", "av") == "bc":
            # a bc model's scores are policy probabilities, not win chances: nothing to back up
            log.warning(
                "event=search_off reason=bc_model detail=engine.search needs win probabilities; "
                "a behavioural-cloning model plays its one-pass policy"
            )
            engine.search.enabled = False
        wants_stockfish = engine.fallback == "stockfish"
        stockfish = find_stockfish(engine.stockfish_path) if wants_stockfish else None
        model_name = getattr(getattr(self.scorer, "path", None), "name", "oneply")
        uses_files = engine.polyglot.enabled or engine.syzygy.enabled
        book = BookAndTables(engine) if uses_files else None
        if book is not None:
            log.info("event=book_loaded %s", book.describe())
        self.services = Services(
            lichess=self.lichess,
            config=self.config,
            batcher=InferenceBatcher(self.scorer, engine.batch_window_ms / 1000),
            fallback=Fallback(stockfish, engine.fallback_time),
            new_policy=new_policy,
            model_name=model_name,
            engine_line=describe_engine(self.scorer, self.config),
            book=book,
            activity=self.activity,
        )
        return self.services

    def run(self) -> int:
        """Load the model, check the account, then play until stopped. Returns the exit
        code. The model comes first: a bad model file must stop the bot before it talks to
        Lichess (and before it accepts a challenge it cannot play)."""
        self.start_services()
        account = self._connect()
        if account is None:
            self.shutdown()
            return self.stopping.exit_code()
        log.info("event=connected user=%s url=%s", account.get("username"), self.config.url)
        self.account = account
        self.heartbeat.start()
        events = threading.Thread(target=self._events_thread, name="events", daemon=True)
        events.start()
        if self.config.matchmaking.allow_matchmaking:
            self.matchmaker.note_activity()  # idle counts from now
            threading.Thread(
                target=self.matchmaker.run,
                args=(self._matchmaking_stopped, self.stop_event.wait),
                name="matchmaking",
                daemon=True,
            ).start()
        try:
            self._supervise(events)
        finally:
            self.shutdown()
        return self.stopping.exit_code()

    def _matchmaking_stopped(self) -> bool:
        return self.stop_event.is_set() or self.stopping.draining.is_set()

    def my_rating(self, speed: str) -> int | None:
        """The account's rating at `speed`, as read at start-up (for opponent_rating_difference)."""
        perfs: dict[str, Any] = self.account.get("perfs") or {}
        rating = (perfs.get(speed) or {}).get("rating")
        return rating if isinstance(rating, int) else None

    def _events_thread(self) -> None:
        try:
            self._event_loop()
        except BaseException as error:  # handed to the main thread, which raises it
            self.fatal = error

    def _supervise(self, events: threading.Thread) -> None:
        """Wait for the end: a stop, a fatal error of the event thread, or a finished drain."""
        while not self.stop_event.is_set():
            if self.fatal is not None:
                raise self.fatal
            if not events.is_alive():
                return
            if self.stopping.forced.is_set():
                self.stop_event.set()
                return
            if self.stopping.draining.is_set() and self._drained():
                return
            self.stop_event.wait(0.1)

    def _drained(self) -> bool:
        """One step of the drain: abort the games still in their first moves (once each);
        True when no game is left, or when `shutdown.timeout` has passed."""
        with self._lock:
            running = [game for game, thread in self.games.values() if thread.is_alive()]
        for game in running:
            if game.id not in self._aborted_on_stop and game.abortable():
                self._aborted_on_stop.add(game.id)
                # in its own thread: a retried request must not hold up a second signal
                threading.Thread(
                    target=game.abort, args=("shutdown",), name=f"abort-{game.id}", daemon=True
                ).start()
        if not running:
            log.info("event=shutdown_done after_s=%.1f", self.stopping.elapsed())
            return True
        if self.stopping.elapsed() >= self.config.shutdown.timeout:
            log.warning(
                "event=shutdown_timeout after_s=%.1f games_left=%s (a restarted bot picks them up)",
                self.stopping.elapsed(),
                ",".join(game.id for game in running),
            )
            return True
        return False

    def _connect(self) -> Account | None:
        """The account, retried with capped back-off while Lichess cannot be reached (a
        network outage at start-up is not a reason to exit); None when stopped meanwhile.
        A rejected token or a non-BOT account is a SetupError at once."""
        backoff = self.lichess.backoff()
        while not self.stop_event.is_set() and not self.stopping.draining.is_set():
            try:
                return self.lichess.check_bot_account()
            except SetupError:
                raise
            except Exception as error:
                if not is_transient(error):
                    raise
                delay = backoff.next_delay()
                log.warning(
                    "event=lichess_unreachable url=%s error=%s retry_in_s=%.2f",
                    self.config.url,
                    type(error).__name__,
                    delay,
                )
                self.stop_event.wait(delay)
        return None

    # -- the event stream -----------------------------------------------------------------

    def _event_loop(self) -> None:
        backoff = self.lichess.backoff()
        while not self.stop_event.is_set():
            try:
                self.pick_up_ongoing()
                for event in self.lichess.stream_events():
                    if self._handled(event):
                        backoff.reset()  # only after success: a failure path never resets it
                    if self.stop_event.is_set():
                        return
                raise ConnectionError("event stream ended")
            except RateLimited:
                continue  # the stream call waits out its pause
            except Exception as error:
                self.heartbeat.alive.clear()
                if status_of(error) == 401:
                    raise SetupError("Lichess rejected the token (HTTP 401)") from None
                delay = backoff.next_delay()
                log.warning(
                    "event=stream_reconnect stream=events error=%s status=%s delay_s=%.2f",
                    type(error).__name__,
                    status_of(error),
                    delay,
                )
                self.stop_event.wait(delay)

    def _handled(self, event: Event) -> bool:
        """Handle one event; False (logged) when it failed. A bad event must not break the
        stream: Lichess would replay it on reconnect and the bot would loop on it."""
        try:
            self.handle_event(event)
            return True
        except Exception as error:
            log.error("event=event_failed type=%s error=%r", str(event.get("type"))[:40], error)
            return False

    def pick_up_ongoing(self) -> None:
        """Games already in progress (a restart, or events missed while disconnected)."""
        try:
            ongoing = self.lichess.ongoing_games()
        except Exception as error:
            log.warning("event=ongoing_failed error=%r", error)
            return
        for game in ongoing:
            game_id = game.get("gameId") or game.get("id")
            if game_id:
                self.start_game(game_id)

    def handle_event(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "challenge":
            self.on_challenge(event.get("challenge") or {})
        elif kind == "gameStart":
            game = event.get("game") or {}
            game_id = game.get("gameId") or game.get("id")
            self.matchmaker.on_game_start(str(game_id))
            self.start_game(game_id)
        elif kind in ("gameFinish", "challengeCanceled", "challengeDeclined"):
            item = event.get("game") or event.get("challenge") or {}
            log.info("event=%s id=%s", kind, item.get("gameId") or item.get("id"))
            if kind == "challengeDeclined":
                self.matchmaker.on_declined(dict(event.get("challenge") or {}))
            elif kind == "gameFinish":
                self.matchmaker.note_activity()

    def activity(self) -> Activity:
        """What !games and !queue report."""
        with self._lock:
            running = [game for game, thread in self.games.values() if thread.is_alive()]
        games = [
            (g.id, str(g.opponent.get("name") or g.opponent.get("id") or "?")) for g in running
        ]
        return Activity(
            games=games,
            max_games=self.config.challenge.max_games,
            draining=self.stopping.draining.is_set(),
            matchmaking="on" if self.config.matchmaking.allow_matchmaking else "off",
        )

    def active_games(self) -> int:
        with self._lock:
            alive = sum(thread.is_alive() for _, thread in self.games.values())
            return alive + len(self.accepted)

    def on_challenge(self, challenge: Challenge) -> None:
        challenge_id = challenge.get("id", "")
        challenger = (challenge.get("challenger") or {}).get("id")
        if challenge.get("direction") == "out" or challenger == self.lichess.username.lower():
            return  # our own challenge, echoed back
        self.matchmaker.note_activity()
        reason = decline_reason(challenge, self.config.challenge, self.active_games())
        if self.stopping.draining.is_set():
            reason = "later"  # shutting down: no new games
        try:
            if reason is None:
                with self._lock:
                    self.accepted.add(challenge_id)
                self.lichess.accept(challenge_id)
                log.info("event=challenge_accepted id=%s from=%s", challenge_id, challenger)
            else:
                self.lichess.decline(challenge_id, reason)
                log.info(
                    "event=challenge_declined id=%s from=%s reason=%s",
                    challenge_id,
                    challenger,
                    reason,
                )
        except Exception as error:  # a challenge that vanished is not worth stopping for
            with self._lock:
                self.accepted.discard(challenge_id)
            log.warning("event=challenge_failed id=%s error=%r", challenge_id, error)

    # -- games --------------------------------------------------------------------------------

    def start_game(self, game_id: str | None) -> None:
        if not game_id or self.services is None:
            return
        with self._lock:
            self.accepted.discard(game_id)
            running = self.games.get(game_id)
            if running and running[1].is_alive():
                return
            game = Game(game_id, self.services, self.stop_event)
            thread = threading.Thread(
                target=self._play, args=(game,), name=f"game-{game_id}", daemon=True
            )
            self.games[game_id] = (game, thread)
            thread.start()  # under the lock: a shutdown never finds it registered, unstarted

    def _play(self, game: Game) -> None:
        try:
            game.run()
        except Exception:
            log.exception("event=game_crashed game=%s", game.id)
        finally:
            with self._lock:
                self.finished.append(game)
                if game.id in self.games and self.games[game.id][0] is game:
                    del self.games[game.id]  # a bot runs for weeks: do not keep every game

    def stop(self) -> None:
        """Stop at once (tests, and the second signal): games are left where they are."""
        self.stop_event.set()

    def request_stop(self, signum: int | None = None) -> None:
        """The graceful stop (bot/shutdown.py): the first call drains, the second forces."""
        self.stopping.request(signum)

    def shutdown(self) -> None:
        self.stop_event.set()
        self.heartbeat.stop()
        with self._lock:
            threads = [thread for _, thread in self.games.values()]
        if not self.stopping.forced.is_set():  # forced: exit now, whatever the games do
            for thread in threads:
                thread.join(timeout=2)
        if self.services is not None:
            self.services.batcher.close()
            self.services.fallback.close()
            if self.services.book is not None:
                self.services.book.close()


# -- the CLI ------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", default="config.yml", help="bot settings (default: %(default)s)"
    )
    parser.add_argument(
        "--init-config",
        nargs="?",
        const="config.yml",
        metavar="PATH",
        help="write the documented default config.yml to PATH (default: config.yml) and exit; "
        "never overwrites a file",
    )
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="upgrade the token's account to a BOT account (irreversible; asks first)",
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(threadName)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("berserk").setLevel(logging.INFO)  # DEBUG would log the token


def upgrade(lichess: Lichess, confirm: Callable[[str], str] = input) -> int:
    """Upgrade the account to BOT after the operator types its name back."""
    lichess.check_token()
    account = lichess.account()
    name = account.get("username", "")
    if account.get("title") == "BOT":
        print(f"{name} is already a BOT account.")
        return 0
    print(
        f"Upgrading {name} to a BOT account is irreversible: it can then never play as a "
        "human, and Lichess only allows it for accounts that never played a game."
    )
    if confirm(f"Type the account name ({name}) to confirm: ").strip().lower() != name.lower():
        print("Not upgraded.")
        return 1
    lichess.upgrade()
    print(f"{name} is now a BOT account.")
    return 0


def init_config(path: str) -> int:
    """`--init-config`: the documented defaults, for users who installed from a wheel and so
    have no repo config.yml to copy."""
    try:
        written = write_default_config(path)
    except ConfigError as error:
        print(f"oneply bot: {error}", file=sys.stderr)
        return 2
    print(
        f"wrote {written}: every key with its default; edit it, then run "
        f"`oneply bot --config {written}`"
    )
    return 0


def one_line(message: str, secrets: list[str]) -> str:
    """A start-up error as one short line without any secret: whatever raised it, the token
    must not reach a terminal or a log collector."""
    for secret in filter(None, secrets):
        message = message.replace(secret, "<token>")
    message = " ".join(message.split())
    return message if len(message) <= 380 else message[:380] + "…"


def run(args: argparse.Namespace) -> int:
    if args.init_config is not None:
        return init_config(args.init_config)
    setup_logging(args.log_level)
    secrets = [os.environ.get(TOKEN_ENV, "")]
    try:
        config = load_config(args.config)
        secrets.append(config.token)
        for warning in startup_warnings(config):
            log.warning("event=config_warning %s", warning)
        lichess = Lichess(config)
        if args.upgrade:
            return upgrade(lichess)
        bot = Bot(config, lichess=lichess)
        restore = bot.stopping.install()
        try:
            return bot.run()
        finally:
            restore()
    except (ConfigError, SetupError, ModelFileError) as error:
        print(f"oneply bot: {one_line(str(error), secrets)}", file=sys.stderr)
        return 2
    except ResponseError as error:  # an HTTP answer that retrying cannot fix
        print(f"oneply bot: Lichess answered {one_line(str(error), secrets)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130

"""config.yml for `oneply bot`: typed sections with defaults, ranges and strict validation.

Every key has a default here, so an empty config.yml is valid. Each field declares its range
(`bound`: numbers by value, strings and lists by length); bot/config_checks.py enforces them
and the rules that span fields or touch the machine (URL form, writable PGN folder, Stockfish
executable, chat templates). Unknown, mistyped or out-of-range keys stop the bot at start-up
with one line that names the key: a typo such as `max_gmaes` must not silently fall back to a
default on a live account, and a value such as `read_timeout: 1e300` must not crash it later.
The documented default file ships inside the package (bot/config.yml, the same text as the
repo's config.yml), so `oneply bot --init-config` works from a wheel too.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from oneply.bot.config_checks import (
    ConfigError,
    bound,
    build,
    check_chat_template,
    check_executable,
    check_importable,
    check_polyglot_book,
    check_syzygy_directory,
    check_url,
    check_writable_directory,
    lichess_host,
    listing,
    require,
)
from oneply.bot.config_yaml import read_yaml
from oneply.engine.play.policy_config import PolicyConfig, PolicyOptionError, policy_from_mapping
from oneply.engine.stockfish import find_stockfish

__all__ = ["BotConfig", "ConfigError", "load_config", "parse_config", "write_default_config"]

TOKEN_ENV = "LICHESS_BOT_TOKEN"
LICHESS_URL = "https://lichess.org"
#: Lichess asks clients to wait at least this long after an HTTP 429.
LICHESS_MIN_429_PAUSE = 60.0
#: onnxruntime threads; the UCI option Threads has the same range
MAX_THREADS = 256
#: long enough for any path a file system accepts
MAX_PATH = 4096
#: engine.search.nodes: more than a minute a move at the measured speeds
MAX_SEARCH_NODES = 100_000


@dataclass
class HttpConfig:
    """Timeouts of every request. The read timeout also detects stalled streams: Lichess
    sends a keep-alive line about every 7 s, so silence longer than this means a dead link."""

    connect_timeout: float = bound(10.0, 0.01, 300)
    read_timeout: float = bound(20.0, 0.01, 600)
    backoff_base: float = bound(1.0, 0.001, 600)
    backoff_max: float = bound(60.0, 0.001, 3600)


@dataclass
class RateLimitConfig:
    """HTTP 429 handling: pause the endpoint for at least `pause_429` seconds (longer when
    the response says so). Below 60 s is only accepted for a url other than lichess.org."""

    pause_429: float = bound(LICHESS_MIN_429_PAUSE, 0.001, 3600)


@dataclass
class SearchConfig:
    """Look-ahead (engine/play/search.py), off by default: the bot then plays as the searchless
    engine. On, each move searches until `nodes` network evaluations (null: no node bound)
    or `time_share` of the move's clock budget (engine/play/clock.py), whichever comes first; the
    move policy then chooses among the searched moves, as with the UCI option Search."""

    enabled: bool = False
    nodes: int | None = bound(None, 1, MAX_SEARCH_NODES)
    time_share: float = bound(0.5, 0.01, 1)
    batch: int = bound(8, 1, 64)  # leaves scored per forward pass (shared with other games)


@dataclass
class PolyglotConfig:
    """An opening book (bot/book.py), lichess-bot's `engine.polyglot` keys: the first book
    that knows the position gives the move, for the first `max_depth` plies of a game."""

    enabled: bool = False
    book: list[str] = listing(list, 20, MAX_PATH)
    selection: str = "weighted_random"  # weighted_random, uniform_random or best_move
    max_depth: int = bound(20, 1, 1000)


@dataclass
class SyzygyConfig:
    """Local Syzygy tablebases (bot/book.py), lichess-bot's `engine.lichess_bot_tbs.syzygy`:
    winning moves from the tables, and only drawing moves in a drawn position."""

    enabled: bool = False
    paths: list[str] = listing(list, 20, MAX_PATH)
    max_pieces: int = bound(7, 3, 7)


@dataclass
class EngineConfig:
    """The model and the move policy. `policy` is parsed and checked by the engine's one
    parser of policy settings (engine/play/policy_config.py), the same that serves UCI."""

    model: str | None = bound(None, 0, MAX_PATH)
    threads: int | None = bound(None, 1, MAX_THREADS)
    # a batch waits this long for other games' positions: longer would eat every clock
    batch_window_ms: float = bound(3.0, 0, 1000)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    fallback: str = "stockfish"
    stockfish_path: str = bound("", 0, MAX_PATH)  # empty: find_stockfish looks for it
    fallback_time: float = bound(0.05, 0.001, 60)
    search: SearchConfig = field(default_factory=SearchConfig)
    polyglot: PolyglotConfig = field(default_factory=PolyglotConfig)
    syzygy: SyzygyConfig = field(default_factory=SyzygyConfig)


@dataclass
class ChallengeConfig:
    """Which challenges to accept; everything else is declined with Lichess's reason."""

    variants: list[str] = listing(lambda: ["standard", "fromPosition"], 10, 40)
    speeds: list[str] = listing(lambda: ["bullet", "blitz", "rapid", "classical"], 10, 40)
    min_base: int = bound(0, 0, 10**7)
    max_base: int = bound(10800, 0, 10**7)
    min_increment: int = bound(0, 0, 10**5)
    max_increment: int = bound(180, 0, 10**5)
    correspondence: bool = False
    modes: list[str] = listing(lambda: ["casual", "rated"], 10, 40)
    bots: bool = True
    humans: bool = True
    min_rating: int = bound(0, 0, 10**4)
    max_rating: int = bound(4000, 0, 10**4)
    block_list: list[str] = listing(list, 10**5, 100)  # Lichess usernames have <= 30
    allow_list: list[str] = listing(list, 10**5, 100)
    max_games: int = bound(4, 1, 100)


def _numbers(default: list[int], high: int) -> Any:
    """A list-of-integers field of 1 to `high` entries (each checked in _check_values)."""
    return field(default_factory=lambda: list(default), metadata={"low": 1, "high": high})


@dataclass
class MatchmakingConfig:
    """Challenging online bots when idle (bot/matchmaking.py), lichess-bot's `matchmaking:`
    names. Off by default. Times: `challenge_timeout` and `decline_delay` in minutes (as
    lichess-bot), `challenge_interval` and `challenge_expiry` in seconds."""

    allow_matchmaking: bool = False
    challenge_timeout: float = bound(30.0, 0, 10**5)
    challenge_initial_time: list[int] = _numbers([60, 180], 20)
    challenge_increment: list[int] = _numbers([1, 2], 20)
    challenge_variant: str = "standard"
    challenge_mode: str = "random"
    opponent_min_rating: int = bound(600, 0, 10**4)
    opponent_max_rating: int = bound(4000, 0, 10**4)
    opponent_rating_difference: int | None = bound(None, 0, 10**4)
    block_list: list[str] = listing(list, 10**5, 100)
    decline_delay: float = bound(60.0, 0, 10**6)
    challenge_interval: float = bound(60.0, 0, 86400)
    challenge_expiry: float = bound(25.0, 1, 3600)
    online_bots_limit: int = bound(200, 1, 5000)


@dataclass
class GreetingConfig:
    """Chat messages; {opponent}, {me} and {model} are replaced. Empty = say nothing.
    Each is checked at start-up (fields, braces, Lichess's 140-character limit)."""

    hello: str = "Hi {opponent}! I'm {me}, a oneply network that plays without search."
    goodbye: str = "Good game, {opponent}!"
    hello_spectators: str = "{me} is oneply: one forward pass per move, no search."
    goodbye_spectators: str = "Thanks for watching!"


@dataclass
class ChatConfig:
    """Chat commands (bot/chat.py): `!help`, `!name`, `!eval`, `!queue`, `!games` and the
    operator's own from `modules` (Python modules imported at start-up). `!eval` answers only
    in `eval_rooms`; one reply per room every `reply_interval` seconds at most."""

    commands: bool = True
    eval_rooms: list[str] = listing(lambda: ["spectator"], 2, 20)
    reply_interval: float = bound(2.0, 0, 3600)
    modules: list[str] = listing(list, 20, 200)


@dataclass
class DrawConfig:
    """Accept an opponent's draw offer when our expected win is at most `max_win`, after
    `min_moves` full moves. (The bot API cannot offer draws on its own.)"""

    accept: bool = False
    max_win: float = bound(0.45, 0, 1)
    min_moves: int = bound(30, 0, 10**4)


@dataclass
class ResignConfig:
    """Resign after `moves` consecutive moves whose expected win is below `max_win`."""

    enabled: bool = False
    max_win: float = bound(0.02, 0, 1)
    moves: int = bound(5, 1, 10**4)


@dataclass
class ShutdownConfig:
    """The graceful stop (first SIGTERM or Ctrl-C): games are finished for at most `timeout`
    seconds (those in their first moves are aborted), then the bot exits; a second signal
    exits at once. Docker's stop timeout must be longer (docs/bot.md, "Stopping the bot")."""

    timeout: float = bound(300.0, 0, 86400)


@dataclass
class BotConfig:
    token: str = bound("", 0, 1000)
    url: str = bound(LICHESS_URL, 0, 2000)
    pgn_directory: str = bound("games", 0, MAX_PATH)
    abort_time: float = bound(30.0, 0.01, 3600)
    http: HttpConfig = field(default_factory=HttpConfig)
    rate_limit: RateLimitConfig = field(default_factory=RateLimitConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    challenge: ChallengeConfig = field(default_factory=ChallengeConfig)
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    greeting: GreetingConfig = field(default_factory=GreetingConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    draw: DrawConfig = field(default_factory=DrawConfig)
    resign: ResignConfig = field(default_factory=ResignConfig)
    shutdown: ShutdownConfig = field(default_factory=ShutdownConfig)

    def __repr__(self) -> str:  # never show the token in logs or tracebacks
        return f"BotConfig(url={self.url!r}, token={'set' if self.token else 'unset'})"


def _policy(value: Any, path: str) -> PolicyConfig:
    """`engine.policy`, declared in the engine with its own ranges and parser (the one that
    serves UCI too)."""
    try:
        return policy_from_mapping(value, path)
    except PolicyOptionError as error:
        raise ConfigError(str(error)) from None


def _check_values(config: BotConfig) -> None:
    """The rules no single field's range expresses: orders between fields, closed sets of
    names, the URL, and what the machine must provide (folders, executables)."""
    http, engine, challenge = config.http, config.engine, config.challenge
    require(
        "http.backoff_max",
        http.backoff_max >= http.backoff_base,
        "at least http.backoff_base",
        http.backoff_max,
    )
    for low, high in [
        ("min_base", "max_base"),
        ("min_increment", "max_increment"),
        ("min_rating", "max_rating"),
    ]:
        low_value, high_value = getattr(challenge, low), getattr(challenge, high)
        require(f"challenge.{low}", low_value <= high_value, f"at most challenge.{high}", low_value)
    known_variants = ["fromPosition", "standard"]
    for variant in challenge.variants:
        require("challenge.variants", variant in known_variants, f"among {known_variants}", variant)
    speeds = ["bullet", "blitz", "classical", "correspondence", "rapid", "ultraBullet"]
    for speed in challenge.speeds:
        require("challenge.speeds", speed in speeds, f"among {speeds}", speed)
    for mode in challenge.modes:
        require("challenge.modes", mode in ("casual", "rated"), "casual and/or rated", mode)
    require(
        "engine.fallback",
        engine.fallback in ("stockfish", "random"),
        "stockfish or random",
        engine.fallback,
    )
    check_url("url", config.url)
    if lichess_host(config.url):
        require(
            "rate_limit.pause_429",
            config.rate_limit.pause_429 >= LICHESS_MIN_429_PAUSE,
            f"at least {LICHESS_MIN_429_PAUSE:.0f} s on lichess.org (Lichess's rule after a 429)",
            config.rate_limit.pause_429,
        )
    for name in ("hello", "goodbye", "hello_spectators", "goodbye_spectators"):
        check_chat_template(f"greeting.{name}", getattr(config.greeting, name))
    _check_matchmaking(config.matchmaking)
    _check_book_and_tables(engine)
    for room in config.chat.eval_rooms:
        require("chat.eval_rooms", room in ("player", "spectator"), "player and/or spectator", room)
    for module in config.chat.modules:
        check_importable("chat.modules", module)
    check_writable_directory("pgn_directory", config.pgn_directory)
    check_executable("engine.stockfish_path", engine.stockfish_path)


def _check_book_and_tables(engine: EngineConfig) -> None:
    selections = ("weighted_random", "uniform_random", "best_move")
    selection = engine.polyglot.selection
    require("engine.polyglot.selection", selection in selections, f"one of {selections}", selection)
    if engine.polyglot.enabled:
        require("engine.polyglot.book", bool(engine.polyglot.book), "at least one book file", [])
        for book in engine.polyglot.book:
            check_polyglot_book("engine.polyglot.book", book)
    if engine.syzygy.enabled:
        require("engine.syzygy.paths", bool(engine.syzygy.paths), "at least one folder", [])
        for directory in engine.syzygy.paths:
            check_syzygy_directory("engine.syzygy.paths", directory)


def _check_matchmaking(mm: MatchmakingConfig) -> None:
    require(
        "matchmaking.opponent_min_rating",
        mm.opponent_min_rating <= mm.opponent_max_rating,
        "at most matchmaking.opponent_max_rating",
        mm.opponent_min_rating,
    )
    for limit in mm.challenge_initial_time:
        require("matchmaking.challenge_initial_time", 0 <= limit <= 10800, "0-10800 s", limit)
    for increment in mm.challenge_increment:
        require("matchmaking.challenge_increment", 0 <= increment <= 180, "0-180 s", increment)
    # Lichess forbids UltraBullet for bots: every clock of the lists must last >= 30 s
    fastest = min(mm.challenge_initial_time) + 40 * min(mm.challenge_increment)
    require(
        "matchmaking.challenge_initial_time",
        fastest >= 30,
        "slower than UltraBullet with every increment (initial + 40 x increment >= 30 s; "
        "Lichess forbids UltraBullet for bots)",
        mm.challenge_initial_time,
    )
    require(
        "matchmaking.challenge_variant",
        mm.challenge_variant == "standard",
        "standard",
        mm.challenge_variant,
    )
    modes = ("casual", "rated", "random")
    require(
        "matchmaking.challenge_mode",
        mm.challenge_mode in modes,
        f"one of {modes}",
        mm.challenge_mode,
    )


def startup_warnings(config: BotConfig) -> list[str]:
    """What is allowed but will not work as the user may expect; logged at start-up."""
    warnings = []
    engine = config.engine
    if engine.fallback == "stockfish" and find_stockfish(engine.stockfish_path) is None:
        warnings.append(
            "engine.fallback is stockfish but no Stockfish was found (stockfish on PATH, "
            "/usr/games/stockfish): when inference fails the bot plays a random legal move"
        )
    search = engine.search
    if not search.enabled and search != SearchConfig():
        warnings.append(
            "engine.search has settings but engine.search.enabled is false: the bot plays "
            "without look-ahead (set enabled: true to search)"
        )
    if engine.policy.mate_fallback and find_stockfish(engine.policy.stockfish_path) is None:
        warnings.append(
            "engine.policy.mate_fallback is on but no Stockfish was found: won positions are "
            "played by the model alone"
        )
    return warnings


def parse_config(data: Any, env: typing.Mapping[str, str] | None = None) -> BotConfig:
    """A validated BotConfig from parsed YAML; $LICHESS_BOT_TOKEN overrides `token`."""
    config = typing.cast(BotConfig, build(BotConfig, data, "", {PolicyConfig: _policy}))
    environ: typing.Mapping[str, str] = os.environ if env is None else env
    if environ.get(TOKEN_ENV):
        config.token = environ[TOKEN_ENV]
    _check_values(config)
    return config


def load_config(
    path: str | os.PathLike[str], env: typing.Mapping[str, str] | None = None
) -> BotConfig:
    """Read and validate config.yml. A missing file is an error, not all defaults: a typo in
    `--config` must not start a bot with settings nobody chose on a live account."""
    path = Path(path)
    try:
        return parse_config(read_yaml(path) or {}, env)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def default_config_text() -> str:
    """The documented default config.yml (every key, its default and what it does)."""
    return resources.files("oneply.bot").joinpath("config.yml").read_text(encoding="utf-8")


def write_default_config(path: str | os.PathLike[str]) -> Path:
    """Write the documented defaults to `path`; never over an existing file (it may hold a
    user's settings or token)."""
    target = Path(path)
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(default_config_text())
    except FileExistsError:
        raise ConfigError(f"{target} already exists: not overwritten") from None
    except OSError as error:
        raise ConfigError(f"cannot write {target}: {error.strerror}") from None
    return target

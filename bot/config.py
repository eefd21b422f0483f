"""config.yml for `oneply bot`: typed sections with defaults, strict validation.

Every key has a default here, so an empty config.yml is valid. Unknown or mistyped keys stop
the bot at start-up with a message that names the key and the allowed ones: a typo such as
`max_gmaes` must not silently fall back to a default on a live account.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oneply.engine.policy_config import PolicyConfig, PolicyOptionError, policy_from_mapping

TOKEN_ENV = "LICHESS_BOT_TOKEN"
LICHESS_URL = "https://lichess.org"
#: Lichess asks clients to wait at least this long after an HTTP 429.
LICHESS_MIN_429_PAUSE = 60.0


class ConfigError(ValueError):
    """A config.yml that cannot be used; the message says which key and what to do."""


@dataclass
class HttpConfig:
    """Timeouts of every request. The read timeout also detects stalled streams: Lichess
    sends a keep-alive line about every 7 s, so silence longer than this means a dead link."""

    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0


@dataclass
class RateLimitConfig:
    """HTTP 429 handling: pause the endpoint for at least `pause_429` seconds (longer when
    the response says so). Below 60 s is only accepted for a url other than lichess.org."""

    pause_429: float = LICHESS_MIN_429_PAUSE


@dataclass
class EngineConfig:
    """The model and the move policy. `policy` is parsed and checked by the engine's one
    parser of policy settings (engine/policy_config.py), the same that serves UCI."""

    model: str | None = None
    threads: int | None = None
    batch_window_ms: float = 3.0
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    fallback: str = "stockfish"
    stockfish_path: str = ""  # empty: oneply.engine.stockfish.find_stockfish looks for it
    fallback_time: float = 0.05


@dataclass
class ChallengeConfig:
    """Which challenges to accept; everything else is declined with Lichess's reason."""

    variants: list[str] = field(default_factory=lambda: ["standard", "fromPosition"])
    speeds: list[str] = field(default_factory=lambda: ["bullet", "blitz", "rapid", "classical"])
    min_base: int = 0
    max_base: int = 10800
    min_increment: int = 0
    max_increment: int = 180
    correspondence: bool = False
    modes: list[str] = field(default_factory=lambda: ["casual", "rated"])
    bots: bool = True
    humans: bool = True
    min_rating: int = 0
    max_rating: int = 4000
    block_list: list[str] = field(default_factory=list)
    allow_list: list[str] = field(default_factory=list)
    max_games: int = 4


@dataclass
class GreetingConfig:
    """Chat messages; {opponent}, {me} and {model} are replaced. Empty = say nothing."""

    hello: str = "Hi {opponent}! I'm {me}, a oneply network that plays without search."
    goodbye: str = "Good game, {opponent}!"
    hello_spectators: str = "{me} is oneply: one forward pass per move, no search."
    goodbye_spectators: str = "Thanks for watching!"


@dataclass
class DrawConfig:
    """Accept an opponent's draw offer when our expected win is at most `max_win`, after
    `min_moves` full moves. (The bot API cannot offer draws on its own.)"""

    accept: bool = False
    max_win: float = 0.45
    min_moves: int = 30


@dataclass
class ResignConfig:
    """Resign after `moves` consecutive moves whose expected win is below `max_win`."""

    enabled: bool = False
    max_win: float = 0.02
    moves: int = 5


@dataclass
class BotConfig:
    token: str = ""
    url: str = LICHESS_URL
    pgn_directory: str = "games"
    abort_time: float = 30.0
    http: HttpConfig = field(default_factory=HttpConfig)
    rate_limit: RateLimitConfig = field(default_factory=RateLimitConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    challenge: ChallengeConfig = field(default_factory=ChallengeConfig)
    greeting: GreetingConfig = field(default_factory=GreetingConfig)
    draw: DrawConfig = field(default_factory=DrawConfig)
    resign: ResignConfig = field(default_factory=ResignConfig)

    def __repr__(self) -> str:  # never show the token in logs or tracebacks
        return f"BotConfig(url={self.url!r}, token={'set' if self.token else 'unset'})"


def _type_ok(value: Any, hint: Any) -> bool:
    """isinstance for the handful of annotations used above (int is a valid float)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_type_ok(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _build(cls: type, data: Any, where: str) -> Any:
    """A `cls` dataclass from a YAML mapping, naming the exact key of any problem."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping of keys, got {data!r}")
    hints = typing.get_type_hints(cls)
    allowed = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"unknown config key {path!r}.{hint} Allowed keys here: {', '.join(allowed)}"
            )
        hint = hints[key]
        if hint is PolicyConfig:  # declared in the engine, with its own ranges and parser
            try:
                values[key] = policy_from_mapping(value, path)
            except PolicyOptionError as error:
                raise ConfigError(str(error)) from None
        elif dataclasses.is_dataclass(hint):
            values[key] = _build(typing.cast(type, hint), value, path)
        elif not _type_ok(value, hint):
            raise ConfigError(
                f"config key {path!r} must be {_type_name(hint)}, got {value!r} "
                f"({type(value).__name__})"
            )
        else:
            values[key] = float(value) if hint is float else value
    return cls(**values)


def _require(path: str, value: float | None, ok: bool, rule: str) -> None:
    """A ConfigError naming the key unless `ok`; NaN and infinity are never ok."""
    finite = value is None or math.isfinite(value)
    if not (ok and finite):
        raise ConfigError(f"config key {path!r} must be {rule}, got {value!r}")


def _check_ranges(config: BotConfig) -> None:
    """Values that have the right type but make no sense (`abort_time: -1` would abort every
    game at once, `read_timeout: 0` fail every request)."""
    http, engine, challenge = config.http, config.engine, config.challenge
    for path, value in [
        ("abort_time", config.abort_time),
        ("http.connect_timeout", http.connect_timeout),
        ("http.read_timeout", http.read_timeout),
        ("http.backoff_base", http.backoff_base),
        ("rate_limit.pause_429", config.rate_limit.pause_429),
        ("engine.fallback_time", engine.fallback_time),
    ]:
        _require(path, value, value > 0, "a number of seconds above 0")
    _require(
        "http.backoff_max",
        http.backoff_max,
        http.backoff_max >= http.backoff_base,
        "at least http.backoff_base",
    )
    _require("engine.batch_window_ms", engine.batch_window_ms, engine.batch_window_ms >= 0, ">= 0")
    threads = engine.threads
    _require("engine.threads", threads, threads is None or threads >= 1, "null or at least 1")
    _require("challenge.max_games", challenge.max_games, challenge.max_games >= 1, "at least 1")
    for low, high in [
        ("min_base", "max_base"),
        ("min_increment", "max_increment"),
        ("min_rating", "max_rating"),
    ]:
        low_value, high_value = getattr(challenge, low), getattr(challenge, high)
        _require(
            f"challenge.{low}",
            low_value,
            0 <= low_value <= high_value,
            f"between 0 and challenge.{high}",
        )
    for path, value in [
        ("draw.max_win", config.draw.max_win),
        ("resign.max_win", config.resign.max_win),
    ]:
        _require(path, value, 0 <= value <= 1, "an expected win in [0, 1]")
    _require("draw.min_moves", config.draw.min_moves, config.draw.min_moves >= 0, ">= 0")
    _require("resign.moves", config.resign.moves, config.resign.moves >= 1, "at least 1")


def _check_values(config: BotConfig) -> None:
    """Cross-field rules that types alone cannot express."""
    _check_ranges(config)
    known_variants = {"standard", "fromPosition"}
    for variant in config.challenge.variants:
        if variant not in known_variants:
            raise ConfigError(
                f"challenge.variants: {variant!r} is not playable by oneply; "
                f"use {sorted(known_variants)}"
            )
    speeds = {"ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence"}
    for speed in config.challenge.speeds:
        if speed not in speeds:
            raise ConfigError(f"challenge.speeds: unknown speed {speed!r}; use {sorted(speeds)}")
    for mode in config.challenge.modes:
        if mode not in ("casual", "rated"):
            raise ConfigError(f"challenge.modes: unknown mode {mode!r}; use casual and/or rated")
    if config.engine.fallback not in ("stockfish", "random"):
        raise ConfigError("engine.fallback must be 'stockfish' or 'random'")
    is_lichess = config.url.rstrip("/") == LICHESS_URL
    if is_lichess and config.rate_limit.pause_429 < LICHESS_MIN_429_PAUSE:
        raise ConfigError(
            f"rate_limit.pause_429 must be at least {LICHESS_MIN_429_PAUSE:.0f} s on lichess.org "
            "(Lichess's rule after an HTTP 429)"
        )


def parse_config(data: Any, env: dict[str, str] | None = None) -> BotConfig:
    """A validated BotConfig from parsed YAML; $LICHESS_BOT_TOKEN overrides `token`."""
    config = _build(BotConfig, data, "")
    environ: typing.Mapping[str, str] = os.environ if env is None else env
    if environ.get(TOKEN_ENV):
        config.token = environ[TOKEN_ENV]
    _check_values(config)
    return config


def load_config(path: str | os.PathLike, env: dict[str, str] | None = None) -> BotConfig:
    """Read and validate config.yml. A missing file is an error, not all defaults: a typo in
    `--config` must not start a bot with settings nobody chose on a live account."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(
            f"config file {path} not found: pass --config FILE (the repo's config.yml "
            "documents every key; an empty file means all defaults)"
        ) from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error})") from None
    try:
        return parse_config(data, env)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None

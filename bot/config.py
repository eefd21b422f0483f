"""config.yml for `oneply bot`: typed sections with defaults, strict validation.

Every key has a default here, so an empty config.yml is valid. Unknown or mistyped keys stop
the bot at start-up with a message that names the key and the allowed ones: a typo such as
`max_gmaes` must not silently fall back to a default on a live account.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

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
    """The model and the move policy. `policy` maps PolicyConfig field names to values."""

    model: str | None = None
    threads: int | None = None
    batch_window_ms: float = 3.0
    policy: dict[str, Any] = field(default_factory=dict)
    fallback: str = "stockfish"
    stockfish_path: str = "/usr/games/stockfish"
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
        if dataclasses.is_dataclass(hint):
            values[key] = _build(hint, value, path)
        elif not _type_ok(value, hint):
            raise ConfigError(
                f"config key {path!r} must be {_type_name(hint)}, got {value!r} "
                f"({type(value).__name__})"
            )
        else:
            values[key] = float(value) if hint is float else value
    return cls(**values)


def _check_values(config: BotConfig) -> None:
    """Cross-field rules that types alone cannot express."""
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
    env = os.environ if env is None else env
    if env.get(TOKEN_ENV):
        config.token = env[TOKEN_ENV]
    _check_values(config)
    return config


def load_config(path: str | os.PathLike, env: dict[str, str] | None = None) -> BotConfig:
    """Read and validate config.yml; a missing file means all defaults."""
    path = Path(path)
    data: Any = {}
    if path.exists():
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML ({error})") from None
    try:
        return parse_config(data, env)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None

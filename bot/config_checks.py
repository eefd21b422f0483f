"""The one validation layer of config.yml's values: types, ranges, sizes, URL form, writable
directories, existing executables and chat templates.

A bot runs for weeks on a live account, so every value that would fail later (a timeout too
large for the socket layer, a chat template with an unknown field, a PGN folder nobody can
write) is refused at start-up with one line naming the key. The messages quote what they were
given through `quote`, which clips long values (a 1 MB string, an alias-expanded structure)
and never shows the token or anything shaped like a Lichess token.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import os
import re
import reprlib
import string
import types
import typing
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oneply.engine.stockfish import find_stockfish


class ConfigError(ValueError):
    """A config.yml that cannot be used; the message says which key and what to do."""


#: keys whose values are never shown in a message
SECRET_KEYS = frozenset({"token"})
#: what a Lichess personal or OAuth token looks like, wherever it turns up
TOKEN_SHAPE = re.compile(r"li[opa]_[A-Za-z0-9]+")
#: Lichess refuses chat lines longer than this
MAX_CHAT = 140
#: fields a chat template may use
CHAT_FIELDS = ("opponent", "me", "model")

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxdict = _repr.maxtuple = _repr.maxset = 4
_repr.maxlevel = 2


def quote(value: Any) -> str:
    """`value` for a message: at most about 60 characters whatever its size (reprlib stops
    early, so an alias bomb is never expanded), with token-shaped text masked."""
    return TOKEN_SHAPE.sub("li?_…", _repr.repr(value))


def bound(default: Any, low: float | None = None, high: float | None = None) -> Any:
    """A dataclass field with an inclusive range [low, high] (None: unbounded on that side);
    for a string or list field the range is its length."""
    return dataclasses.field(default=default, metadata={"low": low, "high": high})


def listing(default: Callable[[], list[str]], high: int, item_high: int) -> Any:
    """A list-of-strings field: at most `high` items of at most `item_high` characters."""
    return dataclasses.field(
        default_factory=default, metadata={"low": 0, "high": high, "item_high": item_high}
    )


# -- types ----------------------------------------------------------------------------------------


def _type_ok(value: Any, hint: Any) -> bool:
    """isinstance for the handful of annotations config.py uses (int is a valid float)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_type_ok(v, item) for v in value)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(
            "null" if arg is type(None) else _type_name(arg) for arg in typing.get_args(hint)
        )
    if origin is list:
        return f"a list of {_type_name(typing.get_args(hint)[0]).removeprefix('a ')}s"
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _shown(path: str, value: Any) -> str:
    """How a message shows the value at `path`: secrets only by their type."""
    if path.rsplit(".", 1)[-1] in SECRET_KEYS:
        return f"{_article(type(value).__name__)} (not shown: it may be a secret)"
    return f"{quote(value)} ({type(value).__name__})"


def _article(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def build(cls: type, data: Any, where: str, special: dict[type, Callable[[Any, str], Any]]) -> Any:
    """A `cls` dataclass from a YAML mapping: unknown keys, wrong types and values outside a
    field's declared range are ConfigErrors naming the key. `special` builds field types
    declared elsewhere (the engine's policy settings) with their own parser."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        what = "the file" if not where else f"config key {where!r}"
        raise ConfigError(
            f"{what} must be a mapping of keys (key: value lines), got "
            f"{_article(type(data).__name__)}"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"unknown config key {quote(path)}.{hint} Allowed keys here: {', '.join(fields)}"
            )
        hint = hints[key]
        if hint in special:
            values[key] = special[hint](value, path)
        elif dataclasses.is_dataclass(hint):
            values[key] = build(typing.cast(type, hint), value, path, special)
        elif not _type_ok(value, hint):
            raise ConfigError(
                f"config key {path!r} must be {_type_name(hint)}, got {_shown(path, value)}"
            )
        else:
            value = float(value) if hint is float else value
            _check_bounds(path, value, fields[key].metadata)
            values[key] = value
    return cls(**values)


def _check_bounds(path: str, value: Any, meta: typing.Mapping[str, Any]) -> None:
    """The field's declared range: numbers by value (finite only), strings and lists by length."""
    low, high = meta.get("low"), meta.get("high")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key {path!r} must be a finite number, got {quote(value)}")
    if value is None or (low is None and high is None):
        return
    if isinstance(value, str | list):
        if high is not None and len(value) > high:
            unit = "characters" if isinstance(value, str) else "entries"
            raise ConfigError(
                f"config key {path!r} is too long: {len(value)} {unit}, at most {high}"
            )
        item_high = meta.get("item_high")
        if isinstance(value, list) and item_high is not None:
            for item in value:
                if len(item) > item_high:
                    raise ConfigError(
                        f"config key {path!r}: entry {quote(item)} is longer than "
                        f"{item_high} characters"
                    )
        return
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(
            f"config key {path!r} must be between {_number(low)} and {_number(high)}, "
            f"got {_shown(path, value)}"
        )


def _number(value: float | None) -> str:
    return "-inf" if value is None else f"{value:g}"


def require(path: str, ok: bool, rule: str, value: Any) -> None:
    """A cross-field rule: a ConfigError naming the key unless `ok`."""
    if not ok:
        raise ConfigError(f"config key {path!r} must be {rule}, got {quote(value)}")


# -- URL, directories, executables, chat ---------------------------------------------------------


def lichess_host(url: str) -> bool:
    """Whether `url` is lichess.org (any spelling: case, a default port, a trailing slash,
    a subdomain), where Lichess's own rules apply."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower().rstrip(".")
    return host == "lichess.org" or host.endswith(".lichess.org")


def check_url(path: str, url: str) -> None:
    """An http(s) URL with a host: anything else would be retried forever at start-up."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in url)
    ):
        raise ConfigError(
            f"config key {path!r} must be an http(s) URL such as https://lichess.org, "
            f"got {quote(url)}"
        )


def check_writable_directory(path: str, directory: str) -> None:
    """`directory` exists and is writable, or can be created: the bot saves every game there,
    and a folder it cannot write would lose each PGN only when the game ends."""
    target = Path(directory).expanduser()
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    problem = None
    if not probe.is_dir():
        problem = f"{quote(str(probe))} is not a directory"
    elif not os.access(probe, os.W_OK | os.X_OK):
        problem = f"{quote(str(probe))} is not writable"
    if problem:
        raise ConfigError(
            f"config key {path!r}: cannot save games in {quote(directory)}: {problem}"
        )


def check_executable(path: str, program: str) -> None:
    """An explicitly configured Stockfish must exist and be executable now, not be found
    missing at the first won position of a game."""
    if program and find_stockfish(program) is None:
        raise ConfigError(
            f"config key {path!r}: no Stockfish executable at {quote(program)}; install "
            "Stockfish or give its full path (empty = stockfish on PATH)"
        )


def check_chat_template(path: str, template: str) -> None:
    """A greeting must format with {opponent}, {me} and {model} only, and fit a chat line."""
    if len(template) > MAX_CHAT:
        raise ConfigError(
            f"config key {path!r} is {len(template)} characters; Lichess chat lines are at "
            f"most {MAX_CHAT}"
        )
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
        unknown = [name for name in fields if name not in CHAT_FIELDS]
        if not unknown:
            template.format(**{name: "x" for name in CHAT_FIELDS})
    except (ValueError, KeyError, IndexError, AttributeError) as error:
        raise ConfigError(
            f"config key {path!r}: {quote(template)} is not a valid template "
            f"({type(error).__name__}: {quote(str(error))}); use {{opponent}}, {{me}}, {{model}} "
            "and write {{ }} for literal braces"
        ) from None
    if unknown:
        raise ConfigError(
            f"config key {path!r}: unknown field {{{quote(unknown[0])}}}; use "
            "{opponent}, {me} or {model}"
        )


def check_importable(path: str, module: str) -> None:
    """An operator's chat-command module must import now (it registers its commands), not
    fail in the middle of a game."""
    try:
        importlib.import_module(module)
    except Exception as error:  # any failure of someone else's module, said in one line
        raise ConfigError(
            f"config key {path!r}: cannot import {quote(module)} "
            f"({type(error).__name__}: {quote(str(error))}); it must be importable from the "
            "bot's Python path (PYTHONPATH)"
        ) from None


def check_polyglot_book(path: str, book: str) -> None:
    """A book file must exist and read as polyglot now, not fail at the first move."""
    import chess
    import chess.polyglot

    try:
        with chess.polyglot.open_reader(book) as reader:
            list(reader.find_all(chess.Board()))
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"config key {path!r}: {quote(book)} is not a readable polyglot book "
            f"({type(error).__name__})"
        ) from None


def check_syzygy_directory(path: str, directory: str) -> None:
    """A tablebase folder must exist and hold Syzygy WDL tables (*.rtbw)."""
    try:
        names = os.listdir(directory)
    except OSError as error:
        raise ConfigError(
            f"config key {path!r}: cannot read the folder {quote(directory)} ({error.strerror})"
        ) from None
    if not any(name.endswith(".rtbw") for name in names):
        raise ConfigError(f"config key {path!r}: no Syzygy tables (*.rtbw) in {quote(directory)}")

"""The move-policy settings: one declaration per option, for UCI, config.yml and code.

Each field of `PolicyConfig` is declared once with `setting(...)`: its default, UCI name,
range and help (its type is the annotation). Everything else is built from that declaration:
the UCI options the engine announces (`uci_options`), the `engine.policy` section of the bot's
config.yml (`policy_from_mapping`) and the one parser that validates both (`PolicyOption`).
A value out of range is an error in both places, with a message naming the option or key,
so a GUI, a config file and a test all see the same rules.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import reprlib
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from oneply.engine.stockfish import find_stockfish

#: UCI's placeholder for an empty string value
EMPTY = "<empty>"
#: a UCI option's value: check → bool, spin → int, string → str
UciValue = bool | int | str
#: (name, type, default, min, max) as a UCI `option` line announces it
UciOptionSpec = tuple[str, str, UciValue, int | None, int | None]


class PolicyOptionError(ValueError):
    """A policy setting that is not of its type or out of its range; the message names it."""


def setting(
    default: Any, uci: str | None, help: str, low: float | None = None, high: float | None = None
) -> Any:
    """A PolicyConfig field with its UCI name (None: config.yml only), help and range."""
    return field(default=default, metadata={"uci": uci, "help": help, "low": low, "high": high})


@dataclass
class PolicyConfig:
    """Settings of the move policy (engine/play/policy.py explains each rule)."""

    repetition_damping: bool = setting(
        True, "RepetitionDamping", "a move allowing a threefold claim scores 0.5"
    )
    sample_moves: int = setting(
        5, "SampleMoves", "sample the engine's first N moves of a game", 0, 200
    )
    temperature: float = setting(
        0.005, "Temperature", "softmax temperature on wins in [0, 1]; 0 = never sample", 0, 100
    )
    seed: int | None = setting(
        None, "Seed", "sampling seed; -1/null = fresh (env ONEPLY_SEED)", -1, 2**31 - 1
    )
    mate_fallback: bool = setting(
        True, "MateFallback", "Stockfish picks among the top moves when all of them win"
    )
    fallback_threshold: float = setting(
        0.9, "FallbackThreshold", "expected win above which a move counts as won", 0, 1
    )
    fallback_top: int = setting(5, None, "how many top moves must all be won", 1, 218)
    stockfish_path: str = setting(
        "", "StockfishPath", "Stockfish executable; empty = PATH, then /usr/games/stockfish"
    )
    fallback_nodes: int = setting(
        1_000_000, "FallbackNodes", "node limit of the fallback search (0 = none)", 0, 10**8
    )
    fallback_ms: int = setting(
        100, "FallbackMs", "time limit of the fallback search, also capped by the clock", 0, 60_000
    )
    mate_in_one: bool = setting(True, "MateInOne", "always play a checkmating move")
    stalemate_as_draw: bool = setting(
        True, "StalemateAsDraw", "a move to a drawn-by-rule position scores 0.5"
    )


@dataclass(frozen=True)
class PolicyOption:
    """One PolicyConfig field as a UCI option and a config key, with its one validator."""

    key: str
    uci: str | None
    type: type
    nullable: bool
    default: Any
    low: float | None
    high: float | None
    help: str

    @property
    def uci_type(self) -> str:
        """UCI's option type: spin is integers only, so floats are strings."""
        return {bool: "check", int: "spin"}.get(self.type, "string")

    def uci_default(self) -> UciValue:
        if self.default is None:
            return int(self.low) if self.low is not None else ""
        return str(self.default) if self.uci_type == "string" else self.default

    def describe(self) -> str:
        kind = {bool: "true or false", int: "an integer", float: "a number"}.get(self.type, "")
        kind = kind or "a string"
        if self.low is not None:
            kind += f" in [{_show(self.low)}, {_show(self.high)}]"
        return kind

    def from_text(self, text: str) -> Any:
        """The value of a UCI `setoption` string (everything arrives as text)."""
        text = text.strip()
        try:
            if self.type is bool:
                if text.lower() not in ("true", "false"):
                    raise ValueError(text)
                value: Any = text.lower() == "true"
            elif self.type is int:
                value = int(text)
            elif self.type is float:
                value = float(text)
            else:
                value = "" if text == EMPTY else text
        except ValueError:
            raise self._error(f"option {self.uci}", text) from None
        if self.nullable and isinstance(value, int) and value == -1:
            return None  # UCI has no null: -1 stands for it (-2 is out of range)
        return self.check(value, f"option {self.uci}")

    def from_yaml(self, value: Any, where: str) -> Any:
        """The value of a config.yml entry, strictly typed (a quoted number is an error)."""
        name = f"config key {where!r}"
        if value is None and self.nullable:
            return None
        if self.type is float and _is_int(value):
            value = float(value)
        ok = _is_int(value) if self.type is int else isinstance(value, self.type)
        if not ok:
            raise self._error(name, value)
        return self.check(value, name)

    def check(self, value: Any, name: str) -> Any:
        """Range (and, for a path, existence) of an already typed value."""
        if self.type is float and not math.isfinite(value):
            raise self._error(name, value)
        if self.low is not None and not self.low <= value <= self.high:
            raise self._error(name, value)
        if self.key == "stockfish_path" and value and find_stockfish(value) is None:
            raise PolicyOptionError(
                f"{name}: no Stockfish executable at {_quote(value)}; install Stockfish or "
                "give its full path (empty = stockfish on PATH)"
            )
        return value

    def _error(self, name: str, value: Any) -> PolicyOptionError:
        return PolicyOptionError(
            f"{name} must be {self.describe()}, got {_quote(value)} ({type(value).__name__})"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(number: float | None) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 80
_repr.maxlist = _repr.maxdict = _repr.maxlevel = 3


def _quote(value: Any) -> str:
    """`value` for a message, clipped: reprlib stops early, so a YAML alias bomb is never
    expanded into a message (a plain repr of one was 254 MB)."""
    return _repr.repr(value)


def _options() -> tuple[PolicyOption, ...]:
    hints = typing.get_type_hints(PolicyConfig)
    options = []
    for f in dataclasses.fields(PolicyConfig):
        hint, nullable = hints[f.name], False
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            nullable = True
        meta = f.metadata
        options.append(
            PolicyOption(
                f.name,
                meta["uci"],
                hint,
                nullable,
                f.default,
                meta["low"],
                meta["high"],
                meta["help"],
            )
        )
    return tuple(options)


#: every policy setting, in declaration order
POLICY_OPTIONS = _options()
BY_KEY = {option.key: option for option in POLICY_OPTIONS}
BY_UCI = {option.uci.lower(): option for option in POLICY_OPTIONS if option.uci}


def uci_options() -> tuple[UciOptionSpec, ...]:
    """(name, type, default, min, max) of each UCI option, for engine/uci/engine.py to announce."""
    return tuple(
        (
            o.uci,
            o.uci_type,
            o.uci_default(),
            _spin_bound(o.low) if o.uci_type == "spin" else None,
            _spin_bound(o.high) if o.uci_type == "spin" else None,
        )
        for o in POLICY_OPTIONS
        if o.uci
    )


def _spin_bound(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def policy_from_mapping(data: Any, where: str = "engine.policy") -> PolicyConfig:
    """A PolicyConfig from config.yml's `engine.policy` mapping; a PolicyOptionError naming
    the key when one is unknown, mistyped or out of range."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyOptionError(f"{where}: expected a mapping of keys, got {_quote(data)}")
    values = {}
    for key, value in data.items():
        option = BY_KEY.get(str(key))
        if option is None:
            close = difflib.get_close_matches(str(key), list(BY_KEY), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise PolicyOptionError(
                f"unknown config key '{where}.{key}'.{hint} Allowed keys here: " + ", ".join(BY_KEY)
            )
        values[option.key] = option.from_yaml(value, f"{where}.{key}")
    return PolicyConfig(**values)

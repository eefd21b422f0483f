"""What `oneply uci` reads: option values and `go` parameters, checked before they are used.

The engine's front end (engine/uci/engine.py) handles the protocol's flow; this module owns the
parsing of its two kinds of parameters, so every out-of-range or unusable value is caught where it
arrives (`setoption`, `go`) and reported in one place's words: a GUI waits for `bestmove` or
carries on after `setoption` whatever it sent, so nothing here may raise past the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import chess

from oneply.engine.play.clock import MIN_THINK_MS, think_budget_ms
from oneply.engine.play.policy_config import UciValue


class UciError(ValueError):
    """A malformed or impossible command; reported as `info string error: …`."""


#: error and warning lines quote at most this many characters of the input
MAX_QUOTE = 80
#: the largest number of milliseconds (or nodes) a `go` value is read as (about 31 years)
MAX_GO_VALUE = 10**12


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """`text` cut to `limit` characters, saying how much was cut: a 1 MB bad FEN must not
    come back as a 2 MB `info string`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def parse_number(raw: str) -> int | None:
    """A `go` value as an int (`1000`, `1e3`, `1000.5`, a 5,000-digit number clamped), or
    None when it is not a finite number."""
    if raw.lstrip("+-").isdigit() and raw.isascii():
        if len(raw.lstrip("+-")) > 15:  # int() refuses > 4300 digits; clamp long ones here
            return -MAX_GO_VALUE if raw.startswith("-") else MAX_GO_VALUE
        return max(-MAX_GO_VALUE, min(MAX_GO_VALUE, int(raw)))
    try:
        value = float(raw)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(max(-MAX_GO_VALUE, min(MAX_GO_VALUE, value)))


@dataclass
class Option:
    """A UCI option as announced by `uci` and changed by `setoption`."""

    name: str
    type: str  # check | spin | string | button
    default: UciValue
    min: int | None = None
    max: int | None = None
    value: UciValue = field(init=False)

    def __post_init__(self) -> None:
        self.value = self.default

    def announce(self) -> str:
        text = f"option name {self.name} type {self.type}"
        if self.type == "check":
            text += f" default {'true' if self.default else 'false'}"
        elif self.type in ("spin", "string"):
            text += f" default {self.default if self.default != '' else '<empty>'}"
        if self.type == "spin":
            text += f" min {self.min} max {self.max}"
        return text

    def parse(self, raw: str) -> UciValue:
        if self.type == "check":
            if raw.lower() not in ("true", "false"):
                raise UciError(f"option {self.name} takes true or false, not {raw!r}")
            return raw.lower() == "true"
        if self.type == "spin":
            try:
                number = int(raw)
            except ValueError:
                raise UciError(f"option {self.name} takes an integer, not {raw!r}") from None
            if (self.min is not None and number < self.min) or (
                self.max is not None and number > self.max
            ):
                raise UciError(f"option {self.name} must be in [{self.min}, {self.max}]")
            return number
        return "" if raw == "<empty>" else raw


@dataclass
class GoLimits:
    """The parameters of one `go` command."""

    wtime: int | None = None
    btime: int | None = None
    winc: int = 0
    binc: int = 0
    movestogo: int | None = None
    movetime: int | None = None
    depth: int | None = None
    nodes: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)

    INT_FIELDS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes")
    FLAGS = ("infinite", "ponder")
    KEYWORDS = (*INT_FIELDS, *FLAGS, "mate", "searchmoves")

    @classmethod
    def parse(cls, tokens: list[str]) -> tuple[GoLimits, list[str]]:
        """The limits that can be read, and a note for each token that could not.

        UCI says unknown tokens are ignored, and a GUI waits for `bestmove` whatever it sent:
        so nothing here raises. A keyword with a missing or non-numeric value is dropped;
        numbers like `1e3` or `1000.5` are read as whole milliseconds.
        """
        limits, notes = cls(), []
        i = 0
        while i < len(tokens):
            word = tokens[i]
            if word in cls.FLAGS:
                setattr(limits, word, True)
            elif word == "searchmoves":
                limits.searchmoves = tokens[i + 1 :]
                break
            elif word in cls.INT_FIELDS or word == "mate":
                raw = tokens[i + 1] if i + 1 < len(tokens) else None
                value = None if raw is None else parse_number(raw)
                if value is None:
                    shown = "nothing" if raw is None else clip(repr(raw), 40)
                    notes.append(f"go {word} needs a number, got {shown}: ignored")
                    if raw is not None and raw not in cls.KEYWORDS:
                        i += 1  # a bad value, not the next keyword: skip it too
                else:
                    if word != "mate":
                        setattr(limits, word, value)
                    i += 1
            else:
                notes.append(f"unknown go parameter {clip(repr(word), 40)}: ignored")
            i += 1
        return limits, notes

    def budget_ms(self, turn: chess.Color, overhead_ms: float) -> float | None:
        """Time this move may use (engine/play/clock.py's budget, or movetime minus the overhead),
        or None when nothing limits it."""
        if self.infinite:
            return None
        if self.movetime is not None:
            movetime_ms: float = max(self.movetime - overhead_ms, MIN_THINK_MS)
            return movetime_ms
        white = turn == chess.WHITE
        budget: float | None = think_budget_ms(
            self.wtime if white else self.btime,
            self.winc if white else self.binc,
            self.movestogo,
            overhead_ms,
        )
        return budget


def legal_searchmoves(board: chess.Board, moves: list[str]) -> tuple[set[chess.Move], list[str]]:
    """The legal moves among `go searchmoves …` and a warning for each one that is not legal
    here; with none legal, every move is considered (a `bestmove` is owed), said in a warning."""
    allowed, warnings = set(), []
    for text in moves:
        try:
            move: chess.Move | None = chess.Move.from_uci(text)
        except ValueError:
            move = None
        if move is not None and board.is_legal(move):
            allowed.add(move)
        else:
            warnings.append(f"searchmoves {clip(text, 40)} is not a legal move here: ignored")
    if not allowed:
        warnings.append("no legal move in searchmoves: considering all moves")
    return allowed, warnings

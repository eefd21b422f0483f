"""Every named opponent, in one table: name → how to build its engine, and, for the strength
suite's fixed opponents, its anchor rating and default number of games.

Two tables, because two different things are named:

* :data:`FAMILIES`: the name patterns ``oneply match``, ``oneply strength`` and the anchor
  calibration accept (``random``, ``greedy-noise50``, ``sf-skill0-n1``, ``sf-elo1500``,
  ``oneply``), each with the builder of its :class:`~oneply.arena.settings.EngineSpec` and
  the words ``--help`` uses for it. A new kind of engine is one :class:`Family`.
* :data:`SUITE`: the strength suite's opponents below Stockfish's UCI_Elo range, weakest first,
  each with its anchor rating (measured with ``python -m oneply.arena.anchors``) and its
  ``--games-FLAG``. A new suite opponent is one :class:`SuiteOpponent`: the suite's games
  flag, its plan, its anchors and its caveat text are all read from here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

from oneply.arena.opponents import CHOOSERS
from oneply.arena.settings import EngineSpec, TimeControl

#: Stockfish's node budget for the ``sf-skillN`` opponents: with a clock, Skill Level alone
#: still searches deep enough to be far above the weak end of the scale
SKILL_NODES = 2_000

#: Stockfish's UCI_Elo range
UCI_ELO_MIN, UCI_ELO_MAX = 1350, 2850

#: every Stockfish opponent: one thread (games run side by side), a small hash
STOCKFISH_OPTIONS: tuple[tuple[str, str], ...] = (("Threads", "1"), ("Hash", "16"))


@dataclass(frozen=True)
class Request:
    """What a name is built for: the time control, the seed, where Stockfish is."""

    tc: TimeControl
    seed: int = 1
    stockfish: str = ""


#: an engine builder: the match of the family's pattern → the engine
Builder = Callable[[re.Match[str], Request], EngineSpec]


@dataclass(frozen=True)
class Family:
    """Names that match ``pattern`` (in full) and the builder of their engines."""

    pattern: str
    build: Builder
    text: str


def _stockfish(request: Request) -> str:
    from oneply.engine.stockfish import require_stockfish

    return require_stockfish(request.stockfish)


def _chooser(found: re.Match[str], request: Request) -> EngineSpec:
    """The engines of :mod:`oneply.arena.opponents`, with P% random moves for ``-noiseP``."""
    name, kind = found.group(0), found.group(1)
    noise = int(found.group(2)) if found.group(2) else 0
    if noise > 100:
        raise ValueError(f"{name}: the noise is a percentage, 0..100")
    command: tuple[str, ...] = (sys.executable, "-m", "oneply.arena.opponents", kind)
    command += ("--seed", str(request.seed))
    command += ("--noise", str(noise / 100)) if noise else ()
    command += ("--stockfish", request.stockfish) if kind == "sf" and request.stockfish else ()
    return EngineSpec(command, (), request.tc, name=name)


def _oneply(found: re.Match[str], request: Request) -> EngineSpec:
    return EngineSpec((sys.executable, "-m", "oneply.engine", "uci"), (), request.tc, name=None)


def _skill(found: re.Match[str], request: Request) -> EngineSpec:
    name, level = found.group(0), int(found.group(1))
    path = _stockfish(request)
    if not 0 <= level <= 20:
        raise ValueError(f"{name}: Skill Level must be 0..20")
    nodes = int(found.group(2)) if found.group(2) else SKILL_NODES
    if nodes < 1:
        raise ValueError(f"{name}: the node budget must be at least 1")
    options = STOCKFISH_OPTIONS + (("Skill Level", str(level)),)
    tc = request.tc
    return EngineSpec((path,), options, TimeControl(tc.base, tc.inc, tc.movetime, nodes), name=name)


def _elo(found: re.Match[str], request: Request) -> EngineSpec:
    name, rating = found.group(0), int(found.group(1))
    path = _stockfish(request)
    if not UCI_ELO_MIN <= rating <= UCI_ELO_MAX:
        raise ValueError(f"{name}: Stockfish's UCI_Elo range is 1350..2850")
    options = STOCKFISH_OPTIONS + (("UCI_LimitStrength", "true"), ("UCI_Elo", str(rating)))
    return EngineSpec((path,), options, request.tc, name=name)


FAMILIES: tuple[Family, ...] = (
    Family(
        rf"({'|'.join(sorted(CHOOSERS))})(?:-noise(\d+))?",
        _chooser,
        "random, greedy, greedy-noiseP / sf-noiseP (P% random moves)",
    ),
    Family(r"(sf)-noise(\d+)", _chooser, ""),  # Stockfish at one node: said with the above
    Family(
        r"sf-skill(\d+)(?:-n(\d+))?",
        _skill,
        "sf-skillN (Skill Level N, 0..20), sf-skillN-nM (and M nodes a move)",
    ),
    Family(r"sf-elo(\d+)", _elo, "sf-eloN (UCI_Elo N, 1350..2850)"),
    Family(r"oneply", _oneply, "oneply"),
)

#: what `--help` texts say about the names
NAMES_TEXT = ", ".join(family.text for family in FAMILIES if family.text)


def builtin_spec(
    name: str, tc: TimeControl, seed: int = 1, stockfish: str = ""
) -> EngineSpec | None:
    """The EngineSpec of a built-in opponent name, or None if ``name`` is not one.

    ``random``, ``greedy``: the engines of :mod:`oneply.arena.opponents`;
    ``random|greedy|sf-noiseP``: with P% random moves (``sf``: Stockfish at one node).
    ``sf-skillN``: Stockfish at Skill Level N (0..20) and :data:`SKILL_NODES` nodes a move;
    ``sf-skillN-nM``: M nodes a move. ``sf-eloN``: Stockfish with UCI_LimitStrength at UCI_Elo
    N (1350..2850) and the given time control. ``oneply``: the bundled engine (`oneply uci`).
    """
    for family in FAMILIES:
        found = re.fullmatch(family.pattern, name)
        if found:
            return family.build(found, Request(tc, seed, stockfish))
    return None


def uci_elo(name: str) -> float | None:
    """The nominal rating of a Stockfish UCI_Elo opponent (``sf-eloN`` → N), else None."""
    found = re.fullmatch(r"sf-elo(\d+)", name)
    return float(found.group(1)) if found else None


# --------------------------------------------------------------------------- the suite


@dataclass(frozen=True)
class SuiteOpponent:
    """A fixed opponent of the strength suite (below the UCI_Elo range), weakest first."""

    #: a built-in name (:data:`FAMILIES`)
    name: str
    #: its rating on Stockfish's UCI_Elo scale at the suite's default time control, measured
    #: once with the `oneply match` runs listed in docs/strength.md (arena/anchors.py)
    anchor: float
    #: the suite's default number of games against it
    games: int
    #: the suite's ``--games-FLAG`` (and ``args.games_FLAG``)
    flag: str
    help: str


SUITE: tuple[SuiteOpponent, ...] = (
    SuiteOpponent("random", -890.0, 20, "random", "(20)"),
    SuiteOpponent("greedy", 625.0, 40, "greedy", "(40)"),
    SuiteOpponent("sf-skill0", 1145.0, 20, "skill", "vs sf-skill0 (20)"),
)

#: name → anchor rating of the suite's fixed opponents
ANCHORS: dict[str, float] = {opponent.name: opponent.anchor for opponent in SUITE}

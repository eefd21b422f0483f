"""`oneply match`: engine-vs-engine games between two UCI engines, with Elo and its interval.

No cutechess or fastchess binary is available here, so this is a small runner on python-chess's
asyncio engine client. Design points (why they are so):

* **Paired openings.** Game ``2k`` and ``2k+1`` start from the same opening with colours swapped,
  so the opening's bias cancels and the pentanomial statistics in :mod:`oneply.arena.elo` apply.
* **The runner keeps the clock.** Engines are told their remaining time, but we measure wall time
  per move ourselves, subtract it, add the increment, and forfeit an engine whose clock falls below
  ``-timemargin``. An engine that never answers is killed at that deadline.
* **Misbehaviour is a loss, never a runner crash.** Crash, illegal move, time forfeit: the
  offending engine loses, the reason goes to the JSON and to the PGN ``Termination`` tag, and that
  engine is restarted for the next game. Every engine runs in its own process group and is killed
  (group-wide) on the way out, including on Ctrl-C.
* **Adjudication.** Draws by the rules (checkmate, stalemate, insufficient material, threefold
  repetition *as it happens*, fifty moves); optional Syzygy tables; a win when both engines'
  reported evals stay beyond ``--resign-score`` for ``--resign-moves`` moves each and a Stockfish
  search confirms it (Stockfish also stands in for an engine that reports no score).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from oneply.arena import elo
from oneply.arena.engines import EngineStartError
from oneply.arena.openings import load_openings
from oneply.arena.registry import NAMES_TEXT, builtin_spec
from oneply.arena.results import MatchResult
from oneply.arena.runner import fmt_elo, run_match
from oneply.arena.settings import (
    DEFAULT_BOOK,
    EngineSpec,
    MatchSettings,
    TimeControl,
)
from oneply.engine.cli import read_args
from oneply.engine.errors import CommandError
from oneply.engine.stockfish import LOOKUP_TEXT, StockfishNotFound, require_stockfish


@dataclass(frozen=True)
class RunnerOptions:
    """The clock, openings, runner and adjudication options that `match`, `ladder` and
    `strength` share (their help: :func:`add_engine_arguments`)."""

    tc: TimeControl | None = None
    movetime: float | None = None
    nodes: int | None = None
    timemargin: float = 100.0
    move_timeout: float = 60.0
    startup_timeout: float = 30.0
    openings: str | None = None
    plies: int | None = None
    opening_order: str = "random"
    seed: int = 1
    concurrency: int = os.cpu_count() or 1
    pgn: str | None = None
    json: str | None = None
    quiet: bool = False
    adjudicator: str = ""
    adjudicate_nodes: int = 50_000
    resign_score: int = 1000
    resign_moves: int = 3
    syzygy: str | None = None


@dataclass(frozen=True)
class MatchConfig:
    """One `oneply match` (help: :func:`add_arguments`)."""

    engine_a: str
    engine_b: str
    games: int = 10
    name_a: str | None = None
    name_b: str | None = None
    option: list[tuple[str, str]] = field(default_factory=list)
    option_a: list[tuple[str, str]] = field(default_factory=list)
    option_b: list[tuple[str, str]] = field(default_factory=list)
    nodes_a: int | None = None
    nodes_b: int | None = None
    sprt: list[float] | None = None
    event: str = "oneply match"
    runner: RunnerOptions = RunnerOptions()


def parse_tc(text: str) -> TimeControl:
    """``BASE[+INC]`` in seconds; BASE may be ``M:SS``. E.g. ``10+0.1``, ``1:00+0.6``, ``60``."""
    base_text, _, inc_text = text.partition("+")
    if ":" in base_text:
        minutes, _, seconds = base_text.partition(":")
        base = 60 * float(minutes) + float(seconds)
    else:
        base = float(base_text)
    inc = float(inc_text) if inc_text else 0.0
    if base <= 0 or inc < 0:
        raise argparse.ArgumentTypeError(f"bad time control {text!r}")
    return TimeControl(base=base, inc=inc)


def parse_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"option must be NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def add_engine_arguments(parser: argparse.ArgumentParser, default_tc: str = "10+0.1") -> None:
    """Time control, opening and runner options shared by `match`, `ladder` and `strength`."""
    tc = parser.add_argument_group(f"time control (default --tc {default_tc})")
    tc.add_argument("--tc", type=parse_tc, help="clock BASE+INC in seconds, e.g. 10+0.1")
    tc.add_argument("--movetime", type=float, metavar="MS", help="fixed time per move (ms)")
    tc.add_argument("--nodes", type=int, help="node budget per move for both engines")
    tc.add_argument(
        "--timemargin",
        type=float,
        default=100.0,
        metavar="MS",
        help="overrun tolerated before a time forfeit (default 100)",
    )
    tc.add_argument(
        "--move-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="without a clock: an engine silent this long loses on time (default 60)",
    )
    tc.add_argument("--startup-timeout", type=float, default=30.0, metavar="S")
    op = parser.add_argument_group("openings (each played twice, colours swapped)")
    op.add_argument(
        "--openings",
        metavar="FILE",
        help=f"polyglot .bin (random weighted walk), .epd or .pgn (default {DEFAULT_BOOK})",
    )
    op.add_argument("--plies", type=int, help="book walk length / PGN moves used (default 8 / all)")
    op.add_argument("--opening-order", choices=("random", "sequential"), default="random")
    op.add_argument("--seed", type=int, default=1, help="opening selection seed (default 1)")
    run = parser.add_argument_group("runner")
    run.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, metavar="K")
    run.add_argument("--pgn", metavar="FILE", help="write all games here")
    run.add_argument("--json", metavar="FILE", help="write results and per-game records here")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    adj = parser.add_argument_group("adjudication")
    adj.add_argument(
        "--adjudicator",
        default="",
        help=f"Stockfish (path or name on PATH) for eval checks (default: {LOOKUP_TEXT})",
    )
    adj.add_argument("--adjudicate-nodes", type=int, default=50_000, metavar="N")
    adj.add_argument(
        "--resign-score", type=int, default=1000, metavar="CP", help="win threshold (1000)"
    )
    adj.add_argument(
        "--resign-moves",
        type=int,
        default=3,
        metavar="N",
        help="moves per engine beyond the threshold; 0 turns eval adjudication off (3)",
    )
    adj.add_argument("--syzygy", metavar="DIR", help="Syzygy tablebase directory (optional)")


#: what `oneply match --help` says under the options
EPILOG = """\
Engines are command lines (split like a shell would). UCI options go with
--option-a/--option-b NAME=VALUE (repeatable; --option sets both), e.g.
  oneply match "oneply uci" /usr/games/stockfish --option-a ModelFile=m.onnx \\
      --option-b "Skill Level=3" --games 100 --tc 10+0.1 --pgn out.pgn
Game 2k and 2k+1 share an opening with colours swapped; Elo is reported from
engine A's side with a 95% interval from pentanomial (pair) statistics.
A crash, illegal move or time forfeit loses the game for that engine.
Built-in engines by name: {names}, e.g.
  oneply match oneply greedy --option-a ModelFile=m.onnx --games 40"""


def describe(parser: argparse.ArgumentParser, epilog: str) -> None:
    """`epilog` under a command's options, its lines as written."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = epilog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    describe(parser, EPILOG.format(names=NAMES_TEXT))
    parser.add_argument("engine_a", help="command line of engine A, or a built-in name")
    parser.add_argument("engine_b", help="command line of engine B, or a built-in name")
    parser.add_argument("--games", type=int, default=10, help="number of games (default 10)")
    parser.add_argument("--name-a", help="display name of engine A (default: its UCI id)")
    parser.add_argument("--name-b", help="display name of engine B")
    for flag, text in (("", "both engines"), ("-a", "engine A"), ("-b", "engine B")):
        parser.add_argument(
            f"--option{flag}",
            type=parse_option,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"UCI option for {text} (repeatable)",
        )
    parser.add_argument("--nodes-a", type=int, help="node budget for engine A only")
    parser.add_argument("--nodes-b", type=int, help="node budget for engine B only")
    parser.add_argument(
        "--sprt",
        nargs=4,
        type=float,
        metavar=("ELO0", "ELO1", "ALPHA", "BETA"),
        help="stop early when the pentanomial GSPRT accepts H0 or H1",
    )
    parser.add_argument("--event", default="oneply match", help="PGN Event tag")
    add_engine_arguments(parser)


def time_control(runner: RunnerOptions, nodes: int | None = None) -> TimeControl:
    """The engine's control from --tc/--movetime/--nodes; a clock by default."""
    tc: TimeControl = runner.tc or TimeControl()
    movetime = runner.movetime / 1000.0 if runner.movetime else None
    nodes = nodes if nodes is not None else runner.nodes
    if runner.tc is None and movetime is None and nodes is None:
        tc = TimeControl(base=10.0, inc=0.1)
    return TimeControl(base=tc.base, inc=tc.inc, movetime=movetime, nodes=nodes)


def common_settings(
    runner: RunnerOptions, a: EngineSpec, b: EngineSpec, games: int, seed: int | None = None
) -> MatchSettings:
    """MatchSettings from the shared CLI options (openings are loaded here)."""
    pairs = (games + 1) // 2
    seed = runner.seed if seed is None else seed
    openings = load_openings(runner.openings, pairs, runner.plies, seed, runner.opening_order)
    shared = ["move_timeout", "startup_timeout", "adjudicator", "adjudicate_nodes"]
    shared += ["resign_score", "resign_moves", "syzygy"]  # named alike in both
    return MatchSettings(
        engine_a=a,
        engine_b=b,
        games=games,
        openings=openings,
        concurrency=max(1, runner.concurrency),
        timemargin=runner.timemargin / 1000.0,
        pgn_path=runner.pgn,
        progress=not runner.quiet,
        **{name: getattr(runner, name) for name in shared},
    )


def engine_spec(
    text: str, options: list[tuple[str, str]], tc: TimeControl, name: str | None, seed: int
) -> EngineSpec:
    """A built-in opponent's spec when ``text`` is one of its names, else a command line."""
    spec = builtin_spec(text, tc, seed)
    if spec is None:
        return EngineSpec(tuple(shlex.split(text)), tuple(options), tc, name)
    return replace(spec, options=spec.options + tuple(options), name=name or spec.name)


def side_spec(config: MatchConfig, side: str) -> EngineSpec:
    """Engine `side` ("a" or "b") of the match: --engine-a, --option-a, --nodes-a, --name-a."""
    options = config.option + getattr(config, f"option_{side}")
    tc = time_control(config.runner, getattr(config, f"nodes_{side}"))
    name = getattr(config, f"name_{side}")
    return engine_spec(getattr(config, f"engine_{side}"), options, tc, name, config.runner.seed)


def match_settings(config: MatchConfig) -> MatchSettings:
    a, b = side_spec(config, "a"), side_spec(config, "b")
    settings = common_settings(config.runner, a, b, config.games)
    settings.sprt = (
        (config.sprt[0], config.sprt[1], config.sprt[2], config.sprt[3]) if config.sprt else None
    )
    settings.event = config.event
    return settings


def summary_text(result: MatchResult) -> str:
    """The final table: W/D/L, score, Elo with both interval kinds, LOS, SPRT, terminations."""
    s = result.stats
    a, b = result.names
    lines = [
        f"Results of {a} vs {b} ({result.settings.engine_a.tc.describe()} vs "
        f"{result.settings.engine_b.tc.describe()}), {s['games']} games",
        f"  W/D/L (A)      {s['wins']}/{s['draws']}/{s['losses']}"
        + (f"  score {s['score']:.3f}" if s["score"] is not None else ""),
    ]
    for label, key in (("pentanomial", "elo_pentanomial"), ("trinomial", "elo_trinomial")):
        est = s.get(key)
        if est:
            text = fmt_elo(elo.EloEstimate(**est_fields(est)))
            if "[" not in text:
                text += f" (95% [{est['lower']:+.1f}, {est['upper']:+.1f}])"
            lines.append(f"  Elo {label:<11} {text}, nElo {est['nelo']:+.1f}")
    lines.append(f"  LOS {100 * s['los']:.1f}%  draw ratio {100 * s['draw_ratio']:.1f}%")
    lines.append(f"  pairs [0, ½, 1, 1½, 2 points] {s['pentanomial']}")
    if "sprt" in s:
        sp = s["sprt"]
        lines.append(
            f"  SPRT ({sp['elo0']:g}, {sp['elo1']:g}): LLR {sp['llr']:.2f} "
            f"[{sp['lower']:.2f}, {sp['upper']:.2f}] → {sp['decision'] or 'undecided'}"
        )
    rate = 60.0 * len(result.games) / result.seconds if result.seconds else 0.0
    lines.append(f"  {result.seconds:.1f}s, {rate:.1f} games/min")
    for reason, count in Counter(g.reason for g in result.games).most_common():
        lines.append(f"  {count:4d} × {reason}")
    return "\n".join(lines)


def est_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An EloEstimate's fields back from its ``to_dict`` form."""
    return {k: v for k, v in data.items() if k != "pm"}


def run(args: argparse.Namespace) -> int:
    config = read_args(MatchConfig, args, runner=read_args(RunnerOptions, args))
    if config.games < 1:
        raise CommandError("--games must be at least 1", exit_code=2)
    try:
        settings = match_settings(config)
    except (ValueError, OSError) as exc:
        raise CommandError(f"oneply match: {exc}", exit_code=2) from None
    try:
        result = run_match(settings)
    except EngineStartError as exc:
        raise CommandError(f"oneply match: engine unusable: {exc}", exit_code=2) from None
    except KeyboardInterrupt:
        print("interrupted; engines stopped", file=sys.stderr)
        return 130
    print(summary_text(result))
    if config.runner.json:
        write_json(config.runner.json, result.to_json())
    return 0


def required_stockfish(command: str, path: str) -> str:
    """The Stockfish a command plays against (engine/stockfish.py's lookup); not found, the
    command's error, which says what to do."""
    try:
        return require_stockfish(path)
    except StockfishNotFound as exc:
        raise CommandError(f"oneply {command}: {exc}", exit_code=2) from None


def write_json(path: str, data: dict[str, Any]) -> None:
    """Strict JSON: infinite interval bounds (too few games) become null."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(_finite(data), indent=2, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

"""`oneply ladder MODEL`: an absolute rating by playing Stockfish at several UCI_Elo levels.

Stockfish's ``UCI_LimitStrength``/``UCI_Elo`` (1350–2850) gives opponents of roughly known
strength. The ladder plays short matches against a few levels, choosing each next level at the
current rating estimate (where a game says the most: scores near 50%), and fits one rating to
all games by maximum likelihood (:func:`oneply.arena.elo.fit_rating`).

Caveat: Stockfish calibrated UCI_Elo at 60s+0.6s per game (anchored to CCRL 40/4), with one
thread. At faster controls or node limits the levels are *not* those Elos, so ladder ratings are
comparable with each other at the same settings, not with human or CCRL ratings.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from oneply.arena import elo, match
from oneply.arena.engines import EngineStartError
from oneply.arena.plots import pyplot
from oneply.arena.results import MatchResult
from oneply.arena.runner import run_match
from oneply.arena.settings import EngineSpec, TimeControl
from oneply.engine.cli import read_args
from oneply.engine.errors import CommandError
from oneply.engine.stockfish import LOOKUP_TEXT

UCI_ELO_MIN, UCI_ELO_MAX = 1350, 2850
CAVEAT = (
    "Stockfish calibrated UCI_Elo at 60s+0.6s (CCRL 40/4 anchor, 1 thread); at other time "
    "controls or node limits the levels are only nominal, so compare ladder ratings only with "
    "ladder ratings measured at the same settings."
)


@dataclass
class Level:
    """Games played against one UCI_Elo level (points from the model's side)."""

    elo: int
    games: int = 0
    points: float = 0.0
    wdl: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def score(self) -> float:
        return self.points / self.games if self.games else 0.5

    def to_dict(self) -> dict[str, Any]:
        lo, hi = elo.level_interval(self.points, self.games)
        return {
            "uci_elo": self.elo,
            "games": self.games,
            "points": self.points,
            "score": self.score,
            "wins": self.wdl[0],
            "draws": self.wdl[1],
            "losses": self.wdl[2],
            "score_ci95": [lo, hi],
        }


def clamp_level(value: float, step: int = 50) -> int:
    """Round to ``step`` and keep inside Stockfish's UCI_Elo range."""
    return int(min(max(round(value / step) * step, UCI_ELO_MIN), UCI_ELO_MAX))


def fit(levels: dict[int, Level]) -> elo.RatingFit:
    played = [lv for lv in levels.values() if lv.games]
    return elo.fit_rating(
        [float(lv.elo) for lv in played], [lv.points for lv in played], [lv.games for lv in played]
    )


def next_level(levels: dict[int, Level], jump: int = 400) -> int:
    """The level to play next: the fitted rating, or a big jump while every game was won/lost
    (then the fit sits at its search bound and says nothing about where 50% is)."""
    played = [lv for lv in levels.values() if lv.games]
    points = sum(lv.points for lv in played)
    games = sum(lv.games for lv in played)
    if points >= games:
        return clamp_level(max(lv.elo for lv in played) + jump)
    if points <= 0:
        return clamp_level(min(lv.elo for lv in played) - jump)
    return clamp_level(fit(levels).rating)


def stockfish_spec(path: str, level: int, tc: TimeControl) -> EngineSpec:
    options = (
        ("Threads", "1"),
        ("Hash", "16"),
        ("UCI_LimitStrength", "true"),
        ("UCI_Elo", str(level)),
    )
    return EngineSpec((path,), options, tc, name=f"Stockfish UCI_Elo {level}")


@dataclass(frozen=True)
class LadderConfig:
    """One `oneply ladder` (help: :func:`add_arguments`)."""

    model: str | None = None
    engine: str | None = None
    option: list[tuple[str, str]] = field(default_factory=list)
    name: str | None = None
    stockfish: str = ""
    start: int = 1700
    rounds: int = 5
    games_per_level: int = 20
    levels: str | None = None
    plot: str | None = None
    runner: match.RunnerOptions = match.RunnerOptions(json="ladder.json")


def model_spec(config: LadderConfig, tc: TimeControl) -> EngineSpec:
    """The engine under test: `python -m oneply.engine uci` with ModelFile, or --engine."""
    if config.engine:
        command = tuple(shlex.split(config.engine))
    else:
        command = (sys.executable, "-m", "oneply.engine", "uci")
    options = list(config.option)
    if config.model:
        options.insert(0, ("ModelFile", str(Path(config.model).resolve())))
    name = config.name or (Path(config.model).stem if config.model else None)
    return EngineSpec(command, tuple(options), tc, name=name)


def play_level(config: LadderConfig, model: EngineSpec, level: int, round_no: int) -> MatchResult:
    sf = stockfish_spec(config.stockfish, level, model.tc)
    seed = config.runner.seed + round_no
    settings = match.common_settings(config.runner, model, sf, config.games_per_level, seed)
    settings.event = f"oneply ladder vs UCI_Elo {level}"
    settings.pgn_path = None
    return run_match(settings)


def plot(path: str, title: str, levels: dict[int, Level], rating: elo.RatingFit) -> bool:
    """Score vs opponent level with the fitted curve and its band; False without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    played = sorted((lv for lv in levels.values() if lv.games), key=lambda lv: lv.elo)
    xs = [lv.elo for lv in played]
    lo_hi = [elo.level_interval(lv.points, lv.games) for lv in played]
    ys = [lv.score for lv in played]
    yerr = [
        [y - lo for y, (lo, _) in zip(ys, lo_hi, strict=True)],
        [hi - y for y, (_, hi) in zip(ys, lo_hi, strict=True)],
    ]
    grid = list(range(UCI_ELO_MIN - 150, UCI_ELO_MAX + 151, 10))

    def curve(r: float) -> list[float]:
        return [elo.elo_to_score(r - g) for g in grid]

    fig, ax = plt.subplots(figsize=(7, 4.5))
    if math.isfinite(rating.pm):
        ax.fill_between(grid, curve(rating.upper), curve(rating.lower), alpha=0.2, label="95% CI")
    ax.plot(grid, curve(rating.rating), label=f"fit: {rating.rating:.0f} ± {rating.pm:.0f}")
    ax.errorbar(xs, ys, yerr=yerr, fmt="o", capsize=3, label="score (95% CI)")
    for lv in played:
        ax.annotate(f"{lv.games}", (lv.elo, lv.score), textcoords="offset points", xytext=(5, 5))
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.set_xlabel("Stockfish UCI_Elo")
    ax.set_ylabel("score of the model")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.text(0.01, 0.01, "UCI_Elo is calibrated at 60s+0.6s; other controls: nominal", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


#: what `oneply ladder --help` says under the options
EPILOG = """\
Plays the model against Stockfish with UCI_LimitStrength at UCI_Elo levels chosen
adaptively (each next level at the current estimate), then fits one rating.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    match.describe(parser, EPILOG + "Caveat: " + CAVEAT)
    parser.add_argument("model", nargs="?", help="ONNX model file (sets the UCI option ModelFile)")
    parser.add_argument(
        "--engine",
        help="engine command line instead of `python -m oneply.engine uci` (e.g. another engine)",
    )
    parser.add_argument(
        "--option",
        type=match.parse_option,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra UCI option for the model engine (repeatable)",
    )
    parser.add_argument("--name", help="display name of the model engine")
    parser.add_argument(
        "--stockfish", default="", help=f"Stockfish binary (default: {LOOKUP_TEXT})"
    )
    parser.add_argument("--start", type=int, default=1700, help="first UCI_Elo level (1700)")
    parser.add_argument("--rounds", type=int, default=5, help="levels to play (default 5)")
    parser.add_argument("--games-per-level", type=int, default=20, metavar="N")
    parser.add_argument(
        "--levels",
        help="comma-separated UCI_Elo levels to play instead of choosing them adaptively",
    )
    parser.add_argument("--plot", metavar="PNG", help="plot file (default: next to the JSON)")
    match.add_engine_arguments(parser)
    parser.set_defaults(json="ladder.json")


def run(args: argparse.Namespace) -> int:
    config = read_args(LadderConfig, args, runner=read_args(match.RunnerOptions, args))
    if not config.model and not config.engine:
        raise CommandError("oneply ladder: give a MODEL file or --engine", exit_code=2)
    if config.model and not Path(config.model).exists():
        raise CommandError(f"oneply ladder: no such model file: {config.model}", exit_code=2)
    return climb(replace(config, stockfish=match.required_stockfish("ladder", config.stockfish)))


def climb(config: LadderConfig) -> int:
    """The rounds, each at the level the games so far point to (or the fixed levels), then
    the fitted rating."""
    pgn = config.runner.pgn
    if pgn:
        new_pgn(pgn)  # every level's games go here, one run per file
    tc = match.time_control(config.runner)
    model = model_spec(config, tc)
    fixed = [clamp_level(float(x)) for x in config.levels.split(",")] if config.levels else None
    levels: dict[int, Level] = {}
    rounds: list[dict[str, Any]] = []
    level = clamp_level(config.start)
    total_rounds = len(fixed) if fixed else config.rounds
    for round_no in range(total_rounds):
        level = fixed[round_no] if fixed else level
        try:
            result = play_level(config, model, level, round_no)
        except EngineStartError as exc:
            raise CommandError(f"oneply ladder: engine unusable: {exc}", exit_code=2) from None
        except KeyboardInterrupt:
            print("interrupted; fitting the games played so far", file=sys.stderr)
            break
        record(levels, level, result)
        if pgn:
            append_pgn(pgn, result)
        rounds.append({"uci_elo": level, **result.stats, "seconds": result.seconds})
        current = fit(levels)
        print(
            f"round {round_no + 1}/{total_rounds}: UCI_Elo {level}: "
            f"{result.stats['wins']}/{result.stats['draws']}/{result.stats['losses']} "
            f"→ estimate {current.rating:.0f} ± {current.pm:.0f}"
        )
        if not fixed:
            level = next_level(levels)
    if not any(lv.games for lv in levels.values()):
        raise CommandError("oneply ladder: no games were played", exit_code=1)
    return report(config, model, tc, levels, rounds)


def new_pgn(path: str) -> None:
    """An empty --pgn file for a run whose matches each add their games to it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("")


def append_pgn(path: str, result: MatchResult) -> None:
    """Add one level's games to the --pgn file (each level's match runs without one)."""
    with open(path, "a") as handle:
        handle.writelines(game.pgn + "\n\n" for game in result.games if game.pgn)


def record(levels: dict[int, Level], level: int, result: MatchResult) -> None:
    lv = levels.setdefault(level, Level(level))
    s = result.stats
    lv.games += s["games"]
    lv.points += s["wins"] + 0.5 * s["draws"]
    lv.wdl = [lv.wdl[0] + s["wins"], lv.wdl[1] + s["draws"], lv.wdl[2] + s["losses"]]


def report(
    config: LadderConfig,
    model: EngineSpec,
    tc: TimeControl,
    levels: dict[int, Level],
    rounds: list[dict[str, Any]],
) -> int:
    """Print the fitted rating, write the JSON and the plot."""
    rating = fit(levels)
    inside = UCI_ELO_MIN <= rating.rating <= UCI_ELO_MAX and not rating.at_bound
    name = model.label()
    if rating.at_bound:
        side = "won" if rating.rating > max(levels) else "lost"
        print(
            f"{name}: every game {side} over {rating.games:.0f} games ({tc.describe()}): "
            f"no finite estimate; the rating is {'above' if side == 'won' else 'below'} "
            f"the levels played"
        )
    else:
        print(
            f"{name}: rating {rating.rating:.0f} ± {rating.pm:.0f} (95% [{rating.lower:.0f}, "
            f"{rating.upper:.0f}]) over {rating.games:.0f} games, {tc.describe()}"
        )
    if not inside and not rating.at_bound:
        print("  outside the UCI_Elo range 1350–2850: extrapolated")
    print(f"  caveat: {CAVEAT}")
    json_path = Path(config.runner.json or "ladder.json")
    plot_path = config.plot or str(json_path.with_suffix(".png"))
    Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
    plotted = plot(plot_path, f"{name} ({tc.describe()})", levels, rating)
    data = {
        "model": config.model,
        "engine": list(model.command),
        "options": dict(model.options),
        "time_control": tc.describe(),
        "fit": rating.to_dict(),
        "within_uci_elo_range": inside,
        "levels": [lv.to_dict() for lv in sorted(levels.values(), key=lambda lv: lv.elo)],
        "rounds": rounds,
        "plot": plot_path if plotted else None,
        "caveat": CAVEAT,
    }
    match.write_json(str(json_path), data)
    print(f"  wrote {json_path}" + (f" and {plot_path}" if plotted else ""))
    return 0

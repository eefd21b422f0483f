"""`oneply strength MODEL`: the strength suite, one rating for one model in a few minutes.

1. **Dev puzzles** by rating band, solved twice: with plain argmax (the model alone) and with
   the full move policy (mate in one, stalemate/repetition handling, mate fallback), using
   the one puzzle checker of :mod:`oneply.arena.puzzles`.
2. **Games** against opponents of known strength, weakest first: the built-in ``random`` and
   ``greedy`` engines (:mod:`oneply.arena.opponents`), Stockfish at Skill Level 0 with a small
   node budget, and Stockfish's ``UCI_Elo`` levels.
3. **One rating** fitted by maximum likelihood over all games, with each opponent fixed at
   its anchor rating (arena/registry.py's ``SUITE``; UCI_Elo levels at their nominal Elo) and
   a weak prior (:func:`oneply.arena.elo.fit_anchored`), so a model below Stockfish's weakest
   level, or one that loses every game, still gets a finite number with an interval.

Why anchors rather than a ladder alone: a weak model loses every game to UCI_Elo 1350, so the
ladder can only say "below". The weak opponents were rated once against Stockfish's levels
(docs/strength.md, "Anchors"), which extends the same scale downwards.

``--baseline OTHER.onnx`` runs the suite for both models and prints the rating difference with
its interval: whether a new model beats the last one, in one command. ``--games-head N`` also
plays the two against each other (arena/head_to_head.py): one interval instead of two that add
up, on another question (which of two relatives wins, not what either scores against the
anchors). ``--search-nodes N``
runs the model a second time with look-ahead (engine/play/search.py): games with the UCI option
``Search`` at the same time control (the clock bounds the search), puzzles searched N nodes
per move; the report puts the two side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import chess

from oneply.arena import head_to_head, match, nodes_chain
from oneply.arena.engines import EngineStartError
from oneply.arena.head_to_head import HeadToHead
from oneply.arena.ladder import UCI_ELO_MAX, UCI_ELO_MIN, append_pgn, new_pgn
from oneply.arena.material import count_match
from oneply.arena.puzzles import (
    DEV_PUZZLES,
    RememberingScorer,
    puzzle_report,
    read_puzzles,
    solve_puzzles,
)
from oneply.arena.registry import SUITE, builtin_spec
from oneply.arena.runner import run_match
from oneply.arena.settings import EngineSpec, TimeControl
from oneply.arena.suite_result import OpponentResult, combined_rating, portable_path
from oneply.arena.suite_result import SuiteResult as SuiteResult  # strength.SuiteResult: ablate
from oneply.engine.cli import read_args
from oneply.engine.errors import CommandError
from oneply.engine.stockfish import LOOKUP_TEXT

#: the default time control of every game (the model answers at once; Stockfish is fast)
DEFAULT_TC = TimeControl(base=5.0, inc=0.05)

CAVEAT = (
    "UCI_Elo levels count at their nominal Elo (Stockfish calibrated them at 60s+0.6s); "
    f"{'/'.join(opponent.name for opponent in SUITE)} at anchors measured against them at "
    "the suite's default time control. Compare ratings only across runs with the same settings."
)


@dataclass(frozen=True)
class StrengthConfig:
    """One `oneply strength` run that plays (help: :func:`add_arguments`); `games` holds each
    suite opponent's game count by its flag (``--games-FLAG``)."""

    model: str
    games: dict[str, int]
    baseline: str | None = None
    search_nodes: int = 0
    nodes_curve: list[int] | None = None
    curve_json: str | None = None
    curve_plot: str | None = None
    games_per_level: int = 10
    levels: list[int] = field(default_factory=lambda: [1350, 1500])
    games_head: int = 0
    stockfish: str = ""
    puzzles: str = str(DEV_PUZZLES)
    puzzle_limit: int | None = None
    plot: str | None = None
    runner: match.RunnerOptions = match.RunnerOptions(tc=DEFAULT_TC)


def strength_config(args: argparse.Namespace) -> StrengthConfig:
    """The run the parsed command line asks for."""
    games = {o.flag: getattr(args, f"games_{o.flag}") for o in SUITE}
    runner = read_args(match.RunnerOptions, args)
    return read_args(StrengthConfig, args, games=games, runner=runner)


# --------------------------------------------------------------------------- opponents


def opponent_plan(config: StrengthConfig) -> list[tuple[str, int, float]]:
    """(built-in name, games, anchor rating) for each opponent with games > 0, weakest first."""
    plan = [(o.name, config.games[o.flag], o.anchor) for o in SUITE]
    plan += [(f"sf-elo{level}", config.games_per_level, float(level)) for level in config.levels]
    return [(name, games, anchor) for name, games, anchor in plan if games > 0]


def model_engine(
    model: str, tc: TimeControl, seed: int, search: bool = False, nodes: int = 0
) -> EngineSpec:
    """`oneply uci` with the model file; one thread (games run side by side), seeded; with
    `search`, the look-ahead on (bounded by the clock, and by `nodes` per move when > 0)."""
    spec = builtin_spec("oneply", tc)
    assert spec is not None
    options: tuple[tuple[str, str], ...] = (
        ("ModelFile", str(Path(model).resolve())),
        ("Threads", "1"),
        ("Seed", str(seed)),
    )
    if search:
        options += (("Search", "true"),)
    if search and nodes:
        options += (("SearchNodes", str(nodes)),)
    name = Path(model).stem + ("+search" if search else "") + (f"{nodes}" if nodes else "")
    return EngineSpec(spec.command, options, tc, name=name)


def play_opponents(
    config: StrengthConfig,
    model: str,
    result: SuiteResult,
    search: bool = False,
    nodes: int = 0,
) -> None:
    """Every planned match, in order; Ctrl-C keeps the games already played."""
    runner = config.runner
    tc = match.time_control(runner)
    engine = model_engine(model, tc, runner.seed, search, nodes)
    for number, (name, games, anchor) in enumerate(opponent_plan(config)):
        opponent = builtin_spec(name, tc, runner.seed + number, config.stockfish)
        assert opponent is not None
        settings = match.common_settings(runner, engine, opponent, games, runner.seed + number)
        settings.event = f"oneply strength vs {name}"
        settings.pgn_path = None
        try:
            played = run_match(settings)
        except KeyboardInterrupt:
            print("interrupted; rating the games played so far", file=sys.stderr)
            result.interrupted = True
            return
        s = played.stats
        gives = count_match(
            [(g.pgn, chess.WHITE if g.a_white else chess.BLACK) for g in played.games]
        )
        result.opponents.append(
            OpponentResult(name, anchor, s["wins"], s["draws"], s["losses"], played.seconds, *gives)
        )
        if runner.pgn:
            append_pgn(runner.pgn, played)
        if not runner.quiet:
            print(
                f"  {engine.label()} vs {name}: {s['wins']}/{s['draws']}/{s['losses']}"
                f" ({played.seconds:.0f}s)",
                file=sys.stderr,
            )


#: the head-to-head draws its openings with the run's seed plus this, apart from the
#: opponents' (seed, seed + 1, ...)
HEAD_SEED_OFFSET = 100


def play_head_to_head(config: StrengthConfig, model: str, baseline: str) -> HeadToHead | None:
    """`--games-head` games of the model against the baseline, each opening twice with colours
    swapped, both engines as the suite runs them; None when interrupted before the end."""
    runner = config.runner
    tc = match.time_control(runner)
    a, b = model_engine(model, tc, runner.seed), model_engine(baseline, tc, runner.seed)
    seed = runner.seed + HEAD_SEED_OFFSET
    settings = match.common_settings(runner, a, b, config.games_head, seed)
    settings.event = "oneply strength head-to-head"
    settings.pgn_path = None
    try:
        played = run_match(settings)
    except KeyboardInterrupt:
        print("interrupted; the head-to-head games are not counted", file=sys.stderr)
        return None
    if runner.pgn:
        append_pgn(runner.pgn, played)
    return head_to_head.from_stats(model, baseline, played.stats, played.seconds)


# --------------------------------------------------------------------------- puzzles


def solve_dev_puzzles(
    model: str,
    path: str,
    limit: int | None,
    seed: int,
    stockfish: str = "",
    search_nodes: int = 0,
) -> dict[str, Any]:
    """Puzzle accuracy by rating band: plain argmax, and the full move policy (no sampling:
    a puzzle asks for the best move); with `search_nodes`, each move searched that far."""
    from oneply.engine.play.inference import MoveScorer, Scorer
    from oneply.engine.play.policy import MovePolicy
    from oneply.engine.play.policy_config import PolicyConfig
    from oneply.engine.play.search import SearchScorer

    puzzles = read_puzzles(Path(path), limit)
    scorer: MoveScorer = Scorer(model)
    if search_nodes:
        scorer = SearchScorer(scorer, search_nodes)
    scorer = RememberingScorer(scorer)  # the policy pass reuses the argmax pass's positions
    policy = MovePolicy(PolicyConfig(sample_moves=0, seed=seed, stockfish_path=stockfish))
    try:
        argmax = solve_puzzles(scorer, puzzles)
        full = solve_puzzles(scorer, puzzles, choose=policy.choose_move)
    finally:
        policy.close()
    return {
        "file": portable_path(path),
        "argmax": puzzle_report(puzzles, argmax),
        "policy": puzzle_report(puzzles, full),
    }


# --------------------------------------------------------------------------- CLI


def run_suite(
    config: StrengthConfig, model: str, search_nodes: int = 0, cap_games: bool = False
) -> SuiteResult:
    """One model's suite; with `search_nodes`, look-ahead on (puzzles at that many nodes per
    move; games at the clock, and capped at the same nodes per move with `cap_games`)."""
    start = time.perf_counter()
    result = SuiteResult(model, search_nodes, capped=cap_games)
    if config.puzzles and config.puzzle_limit != 0:
        result.puzzles = solve_dev_puzzles(
            model,
            config.puzzles,
            config.puzzle_limit,
            config.runner.seed,
            config.stockfish,
            search_nodes,
        )
    play_opponents(
        config, model, result, search=search_nodes > 0, nodes=search_nodes if cap_games else 0
    )
    result.rating = combined_rating(result.opponents)
    result.seconds = time.perf_counter() - start
    return result


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"levels must be integers, got {text!r}") from exc
    bad = [x for x in levels if not UCI_ELO_MIN <= x <= UCI_ELO_MAX]
    if bad:
        raise argparse.ArgumentTypeError(f"UCI_Elo levels must lie in 1350..2850, got {bad}")
    return levels


#: the look-ahead budgets of the nodes curve (`--nodes-curve`, docs/strength.md)
DEFAULT_NODES = (1, 8, 32, 128, 512)


def parse_nodes(text: str) -> list[int]:
    """`1,8,32` → [1, 8, 32]: positive, increasing node budgets."""
    try:
        nodes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        message = f"node budgets are comma-separated integers: {text!r}"
        raise argparse.ArgumentTypeError(message) from exc
    if not nodes or any(n < 1 for n in nodes) or nodes != sorted(set(nodes)):
        raise argparse.ArgumentTypeError(f"node budgets must be positive and increasing: {text!r}")
    return nodes


#: what `oneply strength --help` says under the options
EPILOG = """\
Dev puzzles (argmax and full policy), then games vs random, greedy, Stockfish
Skill Level 0 and UCI_Elo levels, combined into one rating with a 95% interval.
  oneply strength new.onnx --baseline models/oneply-small.onnx --plot s.png
  oneply strength --merge run1.json run2.json   (runs of other seeds as one)
"""


#: the options that read earlier results instead of playing: flag, its files, what it makes
READ_ONLY_INPUTS = (
    (
        "--merge",
        "RUN.json",
        "add up the games of earlier runs' --json files (the same model, baseline and settings, "
        "other seeds) and rate them as one run (arena/strength_merge.py)",
    ),
    (
        "--nodes-chain-from",
        "MATCH.json",
        "the Elo-against-nodes curve from `oneply match --json` files of each budget against "
        "the last, from the searchless engine up (arena/nodes_chain.py)",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    match.describe(parser, EPILOG + "Caveat: " + CAVEAT)
    parser.add_argument("model", nargs="?", help="ONNX model file")
    for flag, files, text in READ_ONLY_INPUTS:  # the modes that play nothing
        parser.add_argument(flag, nargs="+", metavar=files, help=f"play nothing: {text}")
    parser.add_argument("--baseline", metavar="ONNX", help="also run this model and compare")
    parser.add_argument(
        "--search-nodes",
        type=int,
        default=0,
        metavar="N",
        help="also run the model with look-ahead: games at the same time control, puzzles "
        "searched N nodes per move (default 0: searchless only)",
    )
    parser.add_argument(
        "--nodes-curve",
        type=parse_nodes,
        metavar="N,...",
        help="also the suite at each look-ahead budget, games and puzzles capped at N nodes "
        f"per move, e.g. {','.join(map(str, DEFAULT_NODES))}: the strength-against-nodes curve",
    )
    parser.add_argument(
        "--curve-json",
        metavar="JSON",
        help="write the nodes curve here (an existing curve of the same model keeps its other "
        "budgets: the curve grows one budget at a time)",
    )
    parser.add_argument("--curve-plot", metavar="PNG", help="plot the nodes curve here")
    parser.add_argument(
        "--anchor",
        type=float,
        default=nodes_chain.BUNDLED_RATING,
        metavar="RATING",
        help="the searchless engine's suite rating, the chain's zero (default %(default).0f)",
    )
    games = parser.add_argument_group("games per opponent (0 skips it)")
    for opponent in SUITE:
        games.add_argument(
            f"--games-{opponent.flag}",
            type=int,
            default=opponent.games,
            metavar="N",
            help=opponent.help,
        )
    games.add_argument(
        "--games-per-level", type=int, default=10, metavar="N", help="per UCI_Elo level (10)"
    )
    games.add_argument(
        "--levels",
        type=parse_levels,
        default=[1350, 1500],
        metavar="ELO,...",
        help="Stockfish UCI_Elo levels (default 1350,1500)",
    )
    games.add_argument(
        "--games-head",
        type=int,
        default=0,
        metavar="N",
        help="with --baseline: N games of the model against the baseline itself, each opening "
        "twice with colours swapped; pentanomial Elo (default 0: none)",
    )
    games.add_argument("--stockfish", default="", help=f"Stockfish binary (default: {LOOKUP_TEXT})")
    puzzles = parser.add_argument_group("puzzles")
    puzzles.add_argument("--puzzles", default=str(DEV_PUZZLES), help="puzzle CSV (dev set)")
    puzzles.add_argument(
        "--puzzle-limit", type=int, metavar="N", help="N puzzles, evenly spaced (0: none)"
    )
    parser.add_argument("--plot", metavar="PNG", help="write the plot here")
    match.add_engine_arguments(parser, DEFAULT_TC.pgn_tag())
    parser.set_defaults(tc=DEFAULT_TC)


def run(args: argparse.Namespace) -> int:
    from oneply.arena import strength_merge

    if args.nodes_chain_from:
        if args.model or args.merge:
            raise CommandError("oneply strength: --nodes-chain-from takes no model or --merge", 2)
        outputs = (args.curve_json or args.json, args.curve_plot or args.plot)
        return nodes_chain.run(args.nodes_chain_from, args.anchor, *outputs)
    if args.merge:
        if args.model:
            raise CommandError("oneply strength: give a model file or --merge, not both", 2)
        return strength_merge.run(args.merge, args.json)
    if not args.model:
        raise CommandError("oneply strength: give a model file (or --merge RUN.json ...)", 2)
    if args.games_head and not args.baseline:
        raise CommandError("oneply strength: --games-head plays the model against --baseline", 2)

    config = strength_config(args)
    models = [model for model, _ in suite_runs(config)]
    missing = [m for m in models if not Path(m).is_file()]
    if missing:
        raise CommandError(f"oneply strength: no such model file: {', '.join(missing)}", 2)
    if config.puzzles and config.puzzle_limit != 0 and not Path(config.puzzles).is_file():
        raise CommandError(
            f"oneply strength: no puzzle file {config.puzzles} (--puzzle-limit 0 skips puzzles)", 2
        )
    return play(replace(config, stockfish=match.required_stockfish("strength", config.stockfish)))


def play(config: StrengthConfig) -> int:
    """The suite of each model (the model, with look-ahead, the baseline), the head-to-head,
    the report; the nodes curve when asked."""
    from oneply.arena import strength_report as report

    runner = config.runner
    if runner.pgn:
        new_pgn(runner.pgn)
    results = []
    for model, nodes in suite_runs(config):
        try:
            results.append(run_suite(config, model, nodes))
        except EngineStartError as exc:
            raise CommandError(f"oneply strength: engine unusable: {exc}", 2) from None
        if results[-1].interrupted:
            break
    head = None
    if config.baseline and config.games_head > 0 and not results[-1].interrupted:
        head = play_head_to_head(config, config.model, config.baseline)
    print(report.table(results, f"oneply strength ({match.time_control(runner).describe()})"))
    if head is not None:
        print(head_to_head.text(head))
    print(f"  caveat: {CAVEAT}")
    if runner.json:
        data = report.to_json(results, config, CAVEAT)
        if head is not None:
            data["head_to_head"] = head.to_dict()
        match.write_json(runner.json, data)
        print(f"  wrote {runner.json}")
    if config.plot:
        if report.plot(config.plot, results):
            print(f"  wrote {config.plot}")
    if config.nodes_curve and not results[-1].interrupted:
        return nodes_curve(config, config.nodes_curve)
    return 130 if results[-1].interrupted else 0


def suite_runs(config: StrengthConfig) -> list[tuple[str, int]]:
    """(model file, look-ahead nodes) of each suite the run plays, in order."""
    runs = [(config.model, 0)]
    if config.search_nodes > 0:
        runs.append((config.model, config.search_nodes))
    if config.baseline:
        runs.append((config.baseline, 0))
    return runs


def nodes_curve(config: StrengthConfig, budgets: list[int]) -> int:
    """--nodes-curve: the suite at each budget, its table, JSON and plot."""
    from oneply.arena import search_curve as curve

    results = []
    for budget in budgets:
        results.append(run_suite(config, config.model, budget, cap_games=True))
        if results[-1].interrupted:  # keep what was played
            break
    points = [curve.curve_point(r) for r in results]
    model = portable_path(config.model)
    if config.curve_json and Path(config.curve_json).is_file():
        earlier = json.loads(Path(config.curve_json).read_text())
        if earlier.get("model") == model:  # the curve grows by these budgets
            points = curve.merge_points(earlier.get("points", []), points)
    print(curve.curve_table(points))
    if config.curve_json:
        match.write_json(config.curve_json, curve.curve_json(model, points))
        print(f"  wrote {config.curve_json}")
    if config.curve_plot and curve.plot_curve(config.curve_plot, config.model, points):
        print(f"  wrote {config.curve_plot}")
    return 130 if results[-1].interrupted else 0

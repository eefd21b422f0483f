"""`oneply <subcommand>`: the one console script.

Each subcommand lives in the module that does the work; that module exposes
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their
subcommand runs, so `oneply uci` starts fast and never imports torch.

A command reads its parsed options once, into a frozen config dataclass (:func:`read_args`),
and everything below its ``run`` takes that config, never the namespace.

Commands report a failure one way: they raise :class:`CommandError` (bad input, a failed
step: the message says what to do); :func:`run_reporting` prints it and returns its exit code
(2 for bad input), here and for anyone who calls a command's ``run`` in-process.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from oneply.engine import __version__
from oneply.engine.errors import CommandError, missing_extra

T = TypeVar("T")


def read_args(config: type[T], args: argparse.Namespace, **values: Any) -> T:
    """The config dataclass `config` from the parsed options named like its fields (a field
    no option names keeps its default); `values` fill or replace the others."""
    read = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(config)  # type: ignore[arg-type]
        if field.name not in values and hasattr(args, field.name)
    }
    return config(**read, **values)


def run_reporting(run: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """A command's ``run(args)`` as the console script runs it: its status, or a
    CommandError's message on stderr and its exit code."""
    try:
        return int(run(args) or 0)
    except CommandError as error:  # bad input or a failed step: the message says what to do
        print(error, file=sys.stderr)
        code: int = error.exit_code
        return code


#: subcommand → (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "uci": (
        "oneply.engine.uci.engine",
        "run the UCI engine on stdin/stdout (for GUIs and cutechess)",
    ),
    "analyse": ("oneply.engine.play.analyse", "score every legal move of a position"),
    "bench": (
        "oneply.engine.play.bench",
        "measure inference speed: shared fp32/int8 vs per_move fp32",
    ),
    "health": (
        "oneply.engine.health",
        "check that the model loads and scores (Docker HEALTHCHECK)",
    ),
    "export": ("oneply.training.model.export", "export a training checkpoint to ONNX"),
    "import-dm": (
        "oneply.training.model.dm_import",
        "import DeepMind's searchless_chess checkpoints (9M/136M/270M) as model files",
    ),
    "eval": (
        "oneply.training.fit.evaluate",
        "evaluate a model: action accuracy, Kendall tau, puzzles",
    ),
    "train": (
        "oneply.training.cli",
        "training: generate, inspect, positions, annotate, pgn, fit, curve, ablate, campaign, "
        "soup, all",
    ),
    "match": ("oneply.arena.match", "play a match between two UCI engines, with Elo"),
    "ladder": ("oneply.arena.ladder", "rate a model against Stockfish UCI_Elo levels"),
    "strength": ("oneply.arena.strength", "strength suite: puzzles, games vs anchors, one rating"),
    "blunders": (
        "oneply.arena.blunders",
        "a player's costly moves in a match's games, by the reply that punishes them",
    ),
    "bot": ("oneply.bot.main", "play on Lichess as a BOT account"),
}


def _overview() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return "subcommands:\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    top = argparse.ArgumentParser(
        prog="oneply",
        description="oneply: a neural chess engine that plays without search.",
        epilog=_overview() + "\n\nRun `oneply SUBCOMMAND --help` for its options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"oneply {__version__}")
    top.add_argument("command", nargs="?", help=argparse.SUPPRESS)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        # before parsing, or `oneply typo --help` would print the main help and exit 0
        top.error(f"unknown subcommand {argv[0]!r} (choose from {', '.join(COMMANDS)})")
    if not argv or argv[0] not in COMMANDS:
        args, _ = top.parse_known_args(argv)
        if args.command is not None:
            top.error(f"unknown subcommand {args.command!r}")
        top.print_help()
        return 0 if not argv else 2
    name, rest = argv[0], argv[1:]
    try:
        module = importlib.import_module(COMMANDS[name][0])
        parser = argparse.ArgumentParser(prog=f"oneply {name}", description=COMMANDS[name][1])
        module.add_arguments(parser)
        return run_reporting(module.run, parser.parse_args(rest))
    except ModuleNotFoundError as error:  # an optional extra (torch, matplotlib) not installed
        message = missing_extra(error)
        if message is None:
            raise
        print(f"oneply {name}: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `oneply analyse | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""`oneply <subcommand>`: the one console script.

Each subcommand lives in the module that does the work; that module exposes
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their
subcommand runs, so `oneply uci` starts fast and never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engine import __version__

#: subcommand → (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "uci": ("engine.uci", "run the UCI engine on stdin/stdout (for GUIs and cutechess)"),
    "analyse": ("engine.analyse", "score every legal move of a position"),
    "bench": ("engine.bench", "measure inference speed: shared fp32/int8 vs per_move fp32"),
    "health": ("engine.health", "check that the model loads and scores (Docker HEALTHCHECK)"),
    "export": ("training.export", "export a training checkpoint to ONNX"),
    "eval": ("training.evaluate", "evaluate a model: action accuracy, Kendall tau, puzzles"),
    "train": ("training.cli", "training pipeline: positions, annotate, fit, all"),
    "match": ("training.match", "play a match between two UCI engines, with Elo"),
    "ladder": ("training.ladder", "rate a model against Stockfish UCI_Elo levels"),
    "bot": ("bot.main", "play on Lichess as a BOT account"),
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
    if not argv or argv[0] not in COMMANDS:
        args, _ = top.parse_known_args(argv)
        if args.command is not None:
            top.error(f"unknown subcommand {args.command!r}")
        top.print_help()
        return 0 if not argv else 2
    name, rest = argv[0], argv[1:]
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(prog=f"oneply {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    try:
        return int(module.run(parser.parse_args(rest)) or 0)
    except BrokenPipeError:  # `oneply analyse | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

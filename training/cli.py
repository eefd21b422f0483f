"""`oneply train <step>`: the training pipeline's steps, each in the module that does it.

Like engine/cli.py, each step module exposes ``add_arguments(parser)`` and ``run(args)``;
only the chosen one is imported, so `oneply train positions` does not import torch.
"""

from __future__ import annotations

import argparse
import importlib

STEPS: dict[str, tuple[str, str]] = {
    "generate": ("oneply.training.data.generate", "make and score unique positions"),
    "inspect": (
        "oneply.training.data.inspect_data",
        "counts, mix and sample records of a shard dir",
    ),
    "positions": ("oneply.training.data.positions", "generate diverse, deduplicated positions"),
    "annotate": (
        "oneply.training.data.annotate",
        "score every legal move of each position with Stockfish",
    ),
    "pgn": (
        "oneply.training.data.pgn_annotate",
        "score the unique positions of a PGN file's games",
    ),
    "fit": ("oneply.training.fit.fit", "train the transformer on annotated shards"),
    "curve": ("oneply.training.lab.curve", "a model's strength against the samples it saw"),
    "ablate": ("oneply.training.lab.ablation", "sample-efficiency table: variants, one budget"),
    "campaign": ("oneply.training.lab.campaign", "the run of every session: start, save, rate"),
    "soup": ("oneply.training.fit.soup", "average the weights of several models into one"),
    "all": ("oneply.training.pipeline", "positions → annotate → fit → export → eval, resumably"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "steps:\n" + "\n".join(f"  {n:<10} {t}" for n, (_, t) in STEPS.items())
    parser.add_argument("step", choices=STEPS, metavar="STEP", help="one of: " + ", ".join(STEPS))
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    module_name, text = STEPS[args.step]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"oneply train {args.step}", description=text)
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(args.rest)) or 0)

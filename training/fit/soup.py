"""`oneply train soup A.onnx B.onnx ... -o SOUP.onnx`: one model whose weights are the
average of several.

The campaign's rows are warm starts of one another, each a short session from the last, so
their weights lie in one basin; averaging them (a "model soup", Wortsman et al. 2022) often
lands lower in it than any one of them, at no training and no inference cost. What it bought
the campaign: docs/studies/2026-12-03.md.

The first model fixes the architecture. The others must be that architecture or an older
form of it that a warm start upgrades (fewer facts: their missing rows count as zero; without
the side-to-move view): the same rules and code as `fit --init` (training/fit/warm_start.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import torch

from oneply.engine.errors import CommandError
from oneply.training.fit.warm_start import InitSource, load_init, load_weights, upgrades
from oneply.training.model.model import ActionValueModel


def shares_of(weights: Sequence[float] | None, count: int) -> list[float]:
    """Each model's share of the average: `weights` normalised to sum 1 (default: equal)."""
    if count < 2:
        raise CommandError("soup: give two or more models to average")
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise CommandError(f"soup: {len(weights)} --weights for {count} models; give one each")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise CommandError(f"soup: --weights {list(weights)} must be >= 0 with a positive sum")
    total = float(sum(weights))
    return [w / total for w in weights]


def _as_base(source: InitSource, base: InitSource) -> dict[str, torch.Tensor]:
    """`source`'s weights laid out for `base`'s architecture (a refused upgrade: a clear error)."""
    if source.config.layers != base.config.layers:
        raise CommandError(
            f"soup: {source.path} has {source.config.layers} blocks and {base.path} "
            f"{base.config.layers}; average models of one depth"
        )
    extra = sorted(set(source.config.features) - set(base.config.features))
    if extra:
        raise CommandError(
            f"soup: {source.path} reads facts {extra} that {base.path} does not; put the model "
            "that reads the most facts first"
        )
    if not upgrades(source.config, base.config):
        raise CommandError(
            f"soup: {source.path} is another architecture than {base.path} ({source.config} "
            f"against {base.config}); average models of one preset"
        )
    model = ActionValueModel(base.config)
    load_weights(model, source)
    return model.state_dict()


def soup(sources: Sequence[InitSource], shares: Sequence[float]) -> ActionValueModel:
    """The average of the `sources`' weights, each counted with its share, in the first's
    architecture."""
    base = sources[0]
    states = [_as_base(source, base) for source in sources]
    averaged: dict[str, torch.Tensor] = {}
    for key in states[0]:
        total = torch.zeros_like(states[0][key], dtype=torch.float64)
        for share, state in zip(shares, states, strict=True):
            total += share * state[key].double()
        averaged[key] = total.to(states[0][key].dtype)
    model = ActionValueModel(base.config)
    model.load_state_dict(averaged)
    return model.eval()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "models",
        nargs="+",
        help="ONNX model files or checkpoints; the first fixes the architecture",
    )
    parser.add_argument("-o", "--output", required=True, help="ONNX file to write")
    parser.add_argument(
        "--weights",
        type=float,
        nargs="+",
        default=None,
        help="each model's weight in the average, in order (default: all equal)",
    )
    parser.add_argument("--int8", action="store_true", help="dynamically quantize to int8")


def run(args: argparse.Namespace) -> int:
    from oneply.training.model.export import export_model

    paths = [Path(p) for p in args.models]
    shares = shares_of(args.weights, len(paths))
    sources = [load_init(path) for path in paths]
    model = soup(sources, shares)
    recipe = [{"model": str(p), "share": round(s, 6)} for p, s in zip(paths, shares, strict=True)]
    info = export_model(
        model,
        args.output,
        preset=sources[0].preset,
        layout=sources[0].layout,
        training={"soup": recipe},
        int8=args.int8,
    )
    print(f"wrote {args.output}: {info.describe()}, the average of {len(paths)} models")
    return 0

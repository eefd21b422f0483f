"""`oneply export CHECKPOINT -o FILE.onnx`: a training checkpoint → one ONNX model file.

A checkpoint (written by training/fit/checkpoints.py) is a torch.save'd dict with at least
``config`` (ModelConfig fields), ``preset``, ``model`` (state_dict) and optionally ``ema``
(the EMA state_dict, exported in preference), ``summary`` and ``metrics`` (dicts copied into
the ONNX metadata).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from oneply.engine.errors import CommandError
from oneply.engine.model.architecture import PREDICTORS, linear_names
from oneply.engine.model.graph import build_model, quantize_int8
from oneply.engine.model.model_file import ModelInfo

if TYPE_CHECKING:  # torch is imported where it is used: exporting a file needs it, --help not
    import torch

    from oneply.training.model.model import ActionValueModel


def onnx_weights(model: ActionValueModel) -> dict[str, np.ndarray]:
    """A model's parameters under their ONNX names, linear maps transposed to [in, out]
    (which ones: engine/model/architecture.py)."""
    linear = linear_names(model.config.to_dict())
    return {
        name: (t.T if name in linear else t).detach().float().cpu().numpy()
        for name, t in model.state_dict().items()
    }


def torch_weights(
    model: ActionValueModel, weights: dict[str, np.ndarray]
) -> dict[str, torch.Tensor]:
    """The inverse of :func:`onnx_weights`: ONNX initializers → a state_dict for `model`."""
    import torch

    linear = linear_names(model.config.to_dict())
    return {
        name: torch.from_numpy(np.array(w.T if name in linear else w))  # owned, writable
        for name, w in weights.items()
    }


def export_model(
    model: ActionValueModel,
    path: str | os.PathLike[str],
    *,
    preset: str,
    layout: str = "shared",
    trained: bool = True,
    training: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    int8: bool = False,
) -> ModelInfo:
    """Write `model` (an ActionValueModel) as a oneply ONNX file; returns its metadata.

    sv and bc models read the state alone and have no layout (engine/model/graph.py): they are
    recorded as ``shared``, whatever `layout` says."""
    config = model.config
    if config.predictor != "av":
        layout = "shared"
    info = ModelInfo(
        path=Path(path),
        layout=layout,
        num_bins=config.num_bins,
        preset=preset,
        config=config.to_dict(),
        trained=trained,
        training=training or {},
        metrics=metrics or {},
    )
    proto = build_model(onnx_weights(model), layout, config.to_dict(), info.to_metadata())
    return save_model(proto, path, info, int8)


def save_model(
    proto: onnx.ModelProto, path: str | os.PathLike[str], info: ModelInfo, int8: bool
) -> ModelInfo:
    """Write a built model as fp32, or dynamically quantized to int8; returns its metadata
    (shared by `oneply export` and `oneply import-dm`)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if not int8:
        onnx.save(proto, str(path))
        return info
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(proto, str(fp32))
        quantize_int8(fp32, Path(path))
    return ModelInfo(**{**info.__dict__, "quantization": "int8"})


def load_checkpoint_model(
    path: str | os.PathLike[str], use_ema: bool = True
) -> tuple[ActionValueModel, dict[str, Any]]:
    """(model, checkpoint dict) from a checkpoint file, with EMA weights when present."""
    import torch

    from oneply.training.model.model import ActionValueModel, ModelConfig

    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    model = ActionValueModel(ModelConfig(**checkpoint["config"]))
    weights = checkpoint.get("ema") if use_ema and checkpoint.get("ema") else checkpoint["model"]
    model.load_state_dict(weights)
    return model.eval(), checkpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "checkpoint", nargs="?", help="training checkpoint (.pt) written by oneply train fit"
    )
    source.add_argument(
        "--untrained",
        metavar="PRESET",
        help="export a randomly initialised model of this size preset (a placeholder)",
    )
    parser.add_argument("--seed", type=int, default=0, help="initialisation seed for --untrained")
    parser.add_argument(
        "--predictor",
        choices=PREDICTORS,
        default="av",
        help="with --untrained: what the placeholder predicts (a checkpoint knows its own)",
    )
    parser.add_argument("-o", "--output", required=True, help="ONNX file to write")
    parser.add_argument("--layout", choices=("shared", "per_move"), default="shared")
    parser.add_argument("--int8", action="store_true", help="dynamically quantize weights to int8")
    parser.add_argument("--no-ema", action="store_true", help="export raw weights, not EMA")


def untrained_model(preset: str, seed: int = 0, predictor: str = "av") -> ActionValueModel:
    """A freshly initialised model of a size preset (as this predictor), for placeholders and
    tests."""
    from dataclasses import replace

    import torch

    from oneply.training.model.model import PRESETS, ActionValueModel

    if preset not in PRESETS:
        raise CommandError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    torch.manual_seed(seed)
    return ActionValueModel(replace(PRESETS[preset], predictor=predictor)).eval()


def run(args: argparse.Namespace) -> int:
    if args.untrained:
        model = untrained_model(args.untrained, args.seed, args.predictor)
        checkpoint = {"preset": args.untrained, "trained": False}
    else:
        model, checkpoint = load_checkpoint_model(args.checkpoint, use_ema=not args.no_ema)
    info = export_model(
        model,
        args.output,
        preset=checkpoint.get("preset", "custom"),
        layout=args.layout,
        trained=checkpoint.get("trained", True),
        training=checkpoint.get("summary"),
        metrics=checkpoint.get("metrics"),
        int8=args.int8,
    )
    print(f"wrote {args.output}: {info.describe()}")
    return 0

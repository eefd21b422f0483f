"""The model file contract: where the model is, and what its ONNX metadata must say.

Every subcommand resolves the model the same way: an explicit path (`--model`, UCI
`ModelFile`), then the environment variable ONEPLY_MODEL, then the bundled file.

Metadata properties (ONNX `metadata_props`, all strings):

==========================  =====================================================
``oneply.format_version``   FORMAT_VERSION; the engine refuses other versions
``oneply.layout``           ``shared`` or ``per_move`` (see engine/graph.py)
``oneply.num_bins``         K, the number of value bins (128)
``oneply.preset``           size preset name (``9m``, ``tiny``, ...)
``oneply.config``           JSON: layers, heads, width, num_bins, widening
``oneply.trained``          ``true`` or ``false`` (an untrained placeholder)
``oneply.quantization``     ``fp32`` or ``int8``
``oneply.training``         JSON training summary (data, steps, time), optional
``oneply.metrics``          JSON evaluation metrics, optional
==========================  =====================================================
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.values import NUM_BINS

FORMAT_VERSION = "1"
ENV_VAR = "ONEPLY_MODEL"
REPO_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_MODEL = REPO_ROOT / "models" / "oneply-small.onnx"
KEY_PREFIX = "oneply."


class ModelFileError(RuntimeError):
    """A model file that is missing, unreadable or not a oneply model; the message says what
    to do about it."""


@dataclass(frozen=True)
class ModelInfo:
    """What a model file's metadata says about it."""

    path: Path
    layout: str
    num_bins: int
    preset: str
    config: dict
    trained: bool
    quantization: str = "fp32"
    training: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def describe(self) -> str:
        state = "trained" if self.trained else "UNTRAINED placeholder (plays random-quality moves)"
        return f"{self.name} ({self.preset}, {self.layout}, {self.quantization}, {state})"

    def to_metadata(self) -> dict[str, str]:
        """The metadata_props that describe this model (used by export)."""
        props = {
            "format_version": FORMAT_VERSION,
            "layout": self.layout,
            "num_bins": str(self.num_bins),
            "preset": self.preset,
            "config": json.dumps(self.config, sort_keys=True),
            "trained": "true" if self.trained else "false",
            "quantization": self.quantization,
        }
        if self.training:
            props["training"] = json.dumps(self.training, sort_keys=True)
        if self.metrics:
            props["metrics"] = json.dumps(self.metrics, sort_keys=True)
        return {KEY_PREFIX + k: v for k, v in props.items()}


def resolve_model_path(explicit: str | os.PathLike | None = None) -> Path:
    """--model / ModelFile, then $ONEPLY_MODEL, then the bundled model."""
    for candidate in (explicit, os.environ.get(ENV_VAR)):
        if candidate:
            return Path(candidate).expanduser()
    return BUNDLED_MODEL


def parse_metadata(path: Path, props: dict[str, str]) -> ModelInfo:
    """Check a model's metadata against this engine's format and return what it says."""
    ours = {k[len(KEY_PREFIX) :]: v for k, v in props.items() if k.startswith(KEY_PREFIX)}
    if "format_version" not in ours:
        raise ModelFileError(
            f"{path}: not a oneply model (no {KEY_PREFIX}format_version metadata). "
            "Export models with `oneply export CHECKPOINT -o FILE.onnx`."
        )
    if ours["format_version"] != FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: model format version {ours['format_version']}, but this oneply reads "
            f"version {FORMAT_VERSION}. Re-export the model with this version of oneply."
        )
    try:
        num_bins = int(ours.get("num_bins", ""))
        config = json.loads(ours.get("config", "{}"))
        training = json.loads(ours.get("training", "{}"))
        metrics = json.loads(ours.get("metrics", "{}"))
    except ValueError as error:
        raise ModelFileError(f"{path}: malformed oneply metadata ({error}).") from None
    if num_bins != NUM_BINS:
        raise ModelFileError(
            f"{path}: model has K={num_bins} value bins, this oneply expects K={NUM_BINS}."
        )
    layout = ours.get("layout", "")
    if layout not in ("shared", "per_move"):
        raise ModelFileError(f"{path}: unknown layout {layout!r} (expected shared or per_move).")
    return ModelInfo(
        path=path,
        layout=layout,
        num_bins=num_bins,
        preset=ours.get("preset", "?"),
        config=config,
        trained=ours.get("trained") == "true",
        quantization=ours.get("quantization", "fp32"),
        training=training,
        metrics=metrics,
    )

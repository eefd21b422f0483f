"""The model file contract: where the model is, and what its ONNX metadata must say
(docs/FORMAT.md §4-5).

Every subcommand resolves the model the same way: an explicit path (`--model`, UCI
`ModelFile`), then the environment variable ONEPLY_MODEL, then the bundled file.

Metadata properties (ONNX `metadata_props`, all strings):

==========================  =====================================================
``oneply.format_version``   written_version(config); READABLE_VERSIONS are read
``oneply.layout``           ``shared`` or ``per_move`` (see engine/model/graph.py)
``oneply.num_bins``         K, the number of value bins (128)
``oneply.preset``           size preset name (``9m``, ``tiny``, ...)
``oneply.config``           JSON: ModelConfig (layers, heads, width, …, mirror, predictor)
``oneply.predictor``        ``av``, ``sv`` or ``bc`` (absent: ``av``); agrees with the config
``oneply.trained``          ``true`` or ``false`` (an untrained placeholder)
``oneply.quantization``     ``fp32`` or ``int8``
``oneply.training``         JSON training summary (data, steps, time), optional
``oneply.metrics``          JSON evaluation metrics, optional
``oneply.source``           JSON: where imported weights came from (``oneply import-dm``), optional
==========================  =====================================================
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oneply.engine.facts.features import FeatureError, check_names
from oneply.engine.model.architecture import PREDICTORS, attention_flags
from oneply.engine.model.values import NUM_BINS

#: 2: the graph may give move tokens square, promotion and piece features (config
#: ``move_features``); the inputs and outputs are those of version 1, so both are read.
#: 3: the graph may flip positions with black to move (config ``mirror``, engine/model/mirror.py).
#: Same inputs and outputs again, but the flip leaves no trace in the weights: a version-2
#: reader that rebuilds a graph from a file's weights (bench's per_move variant) would silently
#: leave it out. So only files that use it say 3 (see written_version), and older readers
#: refuse them instead of building them wrongly.
#: 4: the graph may read hand-computed facts (config ``features``, engine/facts/features.py) from
#: two more inputs, ``square_facts`` and ``move_facts``; older readers would not pass them.
#: 5: the model may predict a position's value (``sv``: no ``moves`` input, output [B, K]) or a
#: move distribution (``bc``: output [B, N]) instead of action values (config ``predictor``);
#: older readers would read either output as action values. Action-value files keep 2–4.
#: 6: the attention scores may carry biases of the board's geometry (config ``square_bias``,
#: ``smolgen``, ``move_bias``: engine/model/architecture.ATTENTION_FLAGS). Same inputs and outputs,
#: new weights and operations: a version-5 reader that rebuilds a graph from a file's weights
#: would refuse the weights it does not know, so such files say 6 and older readers refuse them
#: by their version, with a message that says to upgrade. Files without them keep 2–5.
FORMAT_VERSION = "6"
READABLE_VERSIONS = ("1", "2", "3", "4", "5", "6")
ENV_VAR = "ONEPLY_MODEL"
REPO_ROOT = Path(__file__).resolve().parents[2]
#: what the engine plays by default: the bundled weights, int8 (cheaper nodes for the search,
#: the same play per position within noise: docs/model.md)
BUNDLED_MODEL = REPO_ROOT / "models" / "oneply-small.onnx"
#: the same weights in fp32: what training warm-starts from (an int8 file has lost them) and what
#: `oneply bench` derives its variants from; BUNDLED_MODEL is `quantize_int8` of it
REFERENCE_MODEL = REPO_ROOT / "models" / "oneply-small-fp32.onnx"
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
    config: dict[str, Any]
    trained: bool
    quantization: str = "fp32"
    training: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    #: imported weights: their repository, checkpoint, step and how they were mapped
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def predictor(self) -> str:
        """What the model predicts (engine/model/architecture.PREDICTORS); ``av`` before
        format 5."""
        return str(self.config.get("predictor") or "av")

    @property
    def features(self) -> tuple[str, ...]:
        """The hand-computed facts the model reads (engine/facts/features.py); () for none."""
        return tuple(self.config.get("features", ()))

    def describe(self) -> str:
        state = "trained" if self.trained else "UNTRAINED placeholder (plays random-quality moves)"
        kind = "" if self.predictor == "av" else f"{self.predictor}, "
        return f"{self.name} ({kind}{self.preset}, {self.layout}, {self.quantization}, {state})"

    def to_metadata(self) -> dict[str, str]:
        """The metadata_props that describe this model (used by export)."""
        props = {
            "format_version": written_version(self.config),
            "layout": self.layout,
            "num_bins": str(self.num_bins),
            "preset": self.preset,
            "config": json.dumps(self.config, sort_keys=True),
            "predictor": self.predictor,
            "trained": "true" if self.trained else "false",
            "quantization": self.quantization,
        }
        if self.training:
            props["training"] = json.dumps(self.training, sort_keys=True)
        if self.metrics:
            props["metrics"] = json.dumps(self.metrics, sort_keys=True)
        if self.source:
            props["source"] = json.dumps(self.source, sort_keys=True)
        return {KEY_PREFIX + k: v for k, v in props.items()}


def written_version(config: dict[str, Any]) -> str:
    """The oldest format version that describes a model of this config (older readers keep
    reading every file that does not need the newer one)."""
    if attention_flags(config):
        return "6"
    if (config.get("predictor") or "av") != "av":
        return "5"
    if config.get("features"):
        return "4"
    return "3" if config.get("mirror") else "2"


#: how every command's ``--model`` describes the default (:func:`resolve_model_path`)
MODEL_DEFAULT_TEXT = f"${ENV_VAR}, then bundled"


def add_model_argument(parser: argparse.ArgumentParser, what: str = "ONNX model file") -> None:
    """The one ``--model`` option: None when not given, which :func:`resolve_model_path` (and
    so ``Scorer``) turns into $ONEPLY_MODEL, then the bundled model."""
    parser.add_argument("--model", default=None, help=f"{what} (default: {MODEL_DEFAULT_TEXT})")


def resolve_model_path(explicit: str | os.PathLike[str] | None = None) -> Path:
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
    if ours["format_version"] not in READABLE_VERSIONS:
        raise ModelFileError(
            f"{path}: model format version {ours['format_version']}, but this oneply reads "
            f"versions {', '.join(READABLE_VERSIONS)}. Re-export the model with this version "
            "of oneply, or upgrade oneply."
        )
    try:
        num_bins = int(ours.get("num_bins", ""))
        config = json.loads(ours.get("config", "{}"))
        training = json.loads(ours.get("training", "{}"))
        metrics = json.loads(ours.get("metrics", "{}"))
        source = json.loads(ours.get("source", "{}"))
    except ValueError as error:
        raise ModelFileError(f"{path}: malformed oneply metadata ({error}).") from None
    try:
        check_names(config.get("features", ()))
    except FeatureError as error:
        raise ModelFileError(f"{path}: {error}") from None
    if num_bins != NUM_BINS:
        raise ModelFileError(
            f"{path}: model has K={num_bins} value bins, this oneply expects K={NUM_BINS}."
        )
    predictor = ours.get("predictor", "av")
    if predictor not in PREDICTORS or (config.get("predictor") or "av") != predictor:
        raise ModelFileError(
            f"{path}: predictor {predictor!r} with config predictor "
            f"{config.get('predictor') or 'av'!r} (expected one of {', '.join(PREDICTORS)}, "
            "the same in both)."
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
        source=source,
    )

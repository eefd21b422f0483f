"""`oneply train fit --init SOURCE`: start a run from the weights of a shipped model or a run.

SOURCE is either an ONNX model file written by `oneply export` (its weights are read back from
the graph's initializers, its architecture from the ``oneply.config`` metadata) or a training
checkpoint (its EMA weights, the ones export ships). Only the weights are taken: the optimiser,
the learning-rate schedule, the EMA and the data order start fresh, so a shipped model can be
trained further on new data with a new schedule. Before the first step the warm-started model
computes exactly what the source computes — also when the run reads more facts than the source
(their rows start at zero) or has more layers (`fit --layers N`: the new blocks are appended
with zero output projections, so each adds nothing to the residual stream until it learns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

from oneply.engine.errors import CommandError
from oneply.engine.facts.features import MOVE_FACTS, SQUARE_FACTS, Fact, group_facts, table_offsets
from oneply.training.fit.config import DEFAULT_PRESET, TrainConfig, check_compatible
from oneply.training.model.model import PRESETS, ActionValueModel, ModelConfig


@dataclass
class InitSource:
    """What a run starts from: the architecture, its preset name and the weights (and the
    layout an ONNX source was served in, which a soup of it keeps)."""

    path: Path
    config: ModelConfig
    preset: str
    weights: dict[str, torch.Tensor]
    layout: str = "shared"


def _model_config(path: Path, values: dict[str, Any]) -> ModelConfig:
    known = {f.name for f in fields(ModelConfig)}
    unknown = sorted(set(values) - known)
    if unknown or not {"layers", "heads", "width"} <= set(values):
        raise CommandError(
            f"{path}: its model config {values} is not one this oneply can build "
            f"(unknown fields {unknown}); export it again with this version of oneply"
        )
    return ModelConfig(**values)


def _from_onnx(path: Path) -> InitSource:
    import onnx

    from oneply.engine.model.graph import weights_of
    from oneply.engine.model.model_file import ModelFileError, parse_metadata
    from oneply.training.model.export import torch_weights

    try:
        proto = onnx.load(str(path))
        info = parse_metadata(path, {p.key: p.value for p in proto.metadata_props})
    except ModelFileError as error:
        raise CommandError(f"--init: {error}") from None
    except Exception as error:  # onnx raises several unrelated types for a bad file
        raise CommandError(f"--init {path}: cannot read as an ONNX model ({error})") from None
    if info.quantization != "fp32":
        raise CommandError(
            f"--init {path}: an {info.quantization} model has lost the fp32 weights; warm-start "
            "from the fp32 export or from the checkpoint it was exported from"
        )
    config = _model_config(path, info.config)
    weights = torch_weights(ActionValueModel(config), weights_of(proto))
    return InitSource(path, config, info.preset, weights, info.layout)


def _from_checkpoint(path: Path) -> InitSource:
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:  # pickle and zip errors of many kinds
        raise CommandError(f"--init {path}: cannot read as a checkpoint ({error})") from None
    if not isinstance(checkpoint, dict) or not {"config", "model"} <= set(checkpoint):
        raise CommandError(f"--init {path}: not a checkpoint written by `oneply train fit`")
    config = _model_config(path, checkpoint["config"])
    weights = checkpoint.get("ema") or checkpoint["model"]
    return InitSource(path, config, checkpoint.get("preset", "custom"), weights)


def load_init(path: str | Path) -> InitSource:
    """Read a warm-start source (.onnx model file, anything else a checkpoint)."""
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"--init {path}: no such file (give a .onnx model or a checkpoint.pt)")
    return _from_onnx(path) if path.suffix == ".onnx" else _from_checkpoint(path)


def deeper_name(preset: str, layers: int) -> str:
    """The preset name of a model grown or built with another depth (``small`` at 6 layers:
    ``small-6L``); the file's ``oneply.config`` holds the architecture, the name is a label."""
    base = preset.partition("-")[0]
    if base in PRESETS and PRESETS[base].layers == layers:
        return base
    return f"{base}-{layers}L"


def init_model_config(
    source: InitSource, preset: str, facts: tuple[str, ...] | None = None, layers: int = 0
) -> tuple[ModelConfig, str]:
    """The run's architecture and preset name: the source's own (with `facts` read instead of
    its facts, when given); an explicit --preset must describe the same weights (they fit no
    other architecture).

    Two allowed differences, both upgrades of an older model:
    - a preset with the side-to-move view (``mirror``) may start from a source without it. The
      view has no weights, and a source that learnt white-to-move positions already knows every
      mirrored one, so the upgraded model scores white-to-move positions exactly as the source
      does and black-to-move ones as the source scores their colour-flipped twins;
    - the run may read more facts (``features``, engine/facts/features.py) than the source: the new
      facts' rows of the embedding tables start at zero, so before the first step the model
      computes what the source computes, and training then learns what the new facts add;
    - the run may have more layers (`layers`) than the source: see `grow_blocks`.
    """
    wanted: ModelConfig | None = source.config
    name = source.preset
    if preset:
        wanted, name = PRESETS.get(preset), preset
        if wanted is not None:  # the preset in the source's predictor (sv, bc drop move options)
            wanted = replace(wanted, predictor=source.config.predictor)
    if wanted is not None and facts is not None:
        wanted = replace(wanted, features=facts)
    if wanted is not None and layers:
        wanted, name = replace(wanted, layers=layers), deeper_name(name, layers)
    if wanted is None or not upgrades(source.config, wanted):
        raise CommandError(
            f"--init {source.path} is a {source.preset!r} model ({source.config}), but the run "
            f"asks for {wanted}; leave out --preset to train the source's own architecture, "
            "give --facts a superset of the source's facts and --layers at least its layers"
        )
    return wanted, name


def upgrades(source: ModelConfig, wanted: ModelConfig) -> bool:
    """`wanted` is the source, or the source with the view turned on, more facts read and/or
    more layers."""
    rest = replace(source, mirror=wanted.mirror, features=wanted.features, layers=wanted.layers)
    facts_ok = set(source.features) <= set(wanted.features)
    deeper_ok = source.layers <= wanted.layers
    return rest == wanted and source.mirror <= wanted.mirror and facts_ok and deeper_ok


Kind = Sequence[Fact]  # the declared square or move facts

#: the facts' embedding tables, by kind: a warm start that adds facts grows them
NEW_TABLES = {"square_fact_embed.weight": SQUARE_FACTS, "move_fact_embed.weight": MOVE_FACTS}


def _grown_table(
    weight: torch.Tensor, into: torch.Tensor, source: ModelConfig, wanted: ModelConfig, kind: Kind
) -> torch.Tensor:
    """The source's fact table laid out for the wanted facts: each of the source's channels
    keeps its rows (moved to its new offset), a new channel's rows stay as `into` has them."""
    sizes = {fact.name: fact.size for fact in kind}
    old_names = [name for name in source.features if name in sizes]
    new_names = [name for name in wanted.features if name in sizes]
    old_offsets, _ = table_offsets(old_names, kind)
    new_offsets, _ = table_offsets(new_names, kind)
    grown = into.detach().clone()
    for name, old in zip(old_names, old_offsets, strict=True):
        new = int(new_offsets[new_names.index(name)])
        grown[new : new + sizes[name]] = weight[old : old + sizes[name]]
    return grown


def _new_block(key: str, first_new: int) -> bool:
    """`key` belongs to a block the source does not have (index `first_new` or later)."""
    parts = key.split(".")
    return parts[0] == "blocks" and int(parts[1]) >= first_new


def grow_blocks(model: ActionValueModel, first_new: int) -> None:
    """Blocks `first_new`… become identities: their attention and MLP output projections are
    zeroed, so the residual stream passes them unchanged and the grown model computes what
    its source computes. They still learn: the gradient of a zeroed output projection is the
    block's (non-zero) inner activations times the stream's gradient, and once it moves, the
    block's inner weights receive gradients too (the zero-initialised adapter's trick)."""
    with torch.no_grad():
        for block in model.typed_blocks()[first_new:]:
            block.proj.weight.zero_()
            block.mlp.w2.weight.zero_()


def load_weights(model: ActionValueModel, source: InitSource) -> None:
    """Copy the source's weights into `model`; a missing or extra tensor is a clear error
    (the fact tables and the new blocks of an upgrade excepted, see init_model_config)."""
    weights = dict(source.weights)
    upgrade = set(source.config.features) != set(model.config.features)
    if upgrade:
        state = model.state_dict()
        for key, kind in NEW_TABLES.items():
            if key in weights and key in state:
                weights[key] = _grown_table(
                    weights[key], state[key], source.config, model.config, kind
                )
    try:
        missing, unexpected = model.load_state_dict(weights, strict=False)
    except RuntimeError as error:
        raise CommandError(
            f"--init {source.path}: weights do not fit its own config ({error})"
        ) from None
    first_new = source.config.layers
    deeper = model.config.layers > first_new
    wrong = [
        k
        for k in missing
        if not (upgrade and k in NEW_TABLES) and not (deeper and _new_block(k, first_new))
    ] + list(unexpected)
    if wrong:
        raise CommandError(
            f"--init {source.path}: weights do not fit its own config (missing or unexpected "
            f"tensors {wrong[:5]})"
        )
    if deeper:
        grow_blocks(model, first_new)


def run_architecture(
    config: TrainConfig, checkpoint: dict[str, Any] | None
) -> tuple[TrainConfig, ModelConfig, InitSource | None]:
    """The run's config with its preset filled in, its architecture, and the --init source.

    A resumed run keeps its checkpoint's architecture (and refuses other settings); a new run
    takes the --init source's, else the preset's.
    """
    if config.layers < 0:
        raise CommandError(f"--layers {config.layers}: give a number of blocks, 1 or more")
    facts = group_facts(config.facts) if config.facts else None
    if checkpoint:
        saved = TrainConfig(**checkpoint["train_config"])
        named = deeper_name(config.preset, config.layers) if config.preset and config.layers else ""
        config = replace(config, preset=named or config.preset or saved.preset)
        check_compatible(saved, config)
        return config, ModelConfig(**checkpoint["config"]), None
    if config.init:
        source = load_init(config.init)
        model_config, preset = init_model_config(source, config.preset, facts, config.layers)
        if model_config.predictor != config.predictor:
            raise CommandError(
                f"--init {source.path} is a {model_config.predictor!r} model; it cannot start a "
                f"--predictor {config.predictor} run (give --predictor {model_config.predictor})"
            )
        return replace(config, preset=preset), model_config, source
    preset = config.preset or DEFAULT_PRESET
    model_config = replace(PRESETS[preset], predictor=config.predictor)
    if facts is not None:
        model_config = replace(model_config, features=facts)
    if config.layers:
        model_config = replace(model_config, layers=config.layers)
        preset = deeper_name(preset, config.layers)
    return replace(config, preset=preset), model_config, None

"""`oneply import-dm CHECKPOINT_DIR -o FILE.onnx`: DeepMind's published searchless_chess
checkpoints → oneply model files: the action-value models (9M, 136M, 270M) and the 9M
state-value and behavioural-cloning ones (their download's ``9M_state_value`` and
``9M_behavioral_cloning``; docs/FORMAT.md §4b).

Their network (google-deepmind/searchless_chess, src/transformer.py, built by
src/engines/constants.py) reads [BOS, 77 state tokens, action] with full attention and reads
the value at the action: oneply's ``per_move`` layout. Their checkpoint is an orbax params tree
of a haiku model. Every parameter maps onto engine/model/graph.py's weights without approximation:

==========================================  ===============================================
their parameter (haiku module/param)         oneply weight
==========================================  ===============================================
``embed/embeddings`` [1968, D] × √D           one table for state characters, BOS (token 0)
                                              and actions: ``state_embed`` = rows 0..30,
                                              ``bos`` = row 0, ``move_embed`` = all rows.
                                              The √D they multiply after the lookup is folded
                                              into the table (√D = 16 or 32: exact in fp32).
``embed_1/embeddings`` [79, D]                ``pos_embed`` (learned positions 0..78)
``layer_norm_{2i}``, ``layer_norm_{2i+1}``    ``blocks.i.ln1``, ``blocks.i.ln2`` (pre-LN)
``layer_norm_{2L}``                           ``final_ln`` (their ``apply_post_ln``)
``multi_head_dot_product_attention_i/``       ``blocks.i.qkv`` = [q | k | v] columns,
``linear, linear_1, linear_2, linear_3``      ``blocks.i.proj`` = ``linear_3``
``linear_{3i}``, ``_{3i+1}``, ``_{3i+2}``     ``blocks.i.mlp.w13`` = [gate | up], ``w2``
``linear_{3L}`` (w, b) [D, 128]               ``head`` (128 uniform bins, centres (i+½)/128)
==========================================  ===============================================

haiku's LayerNorm (ε = 1e-5), its [in, out] Linear weights, the 1/√(D/H) attention scale,
SwiGLU and the final log-softmax are what engine/model/graph.py computes already. Their tokenizer
and action vocabulary are oneply's (docs/FORMAT.md §1-2; tests/training/test_dm_import.py
checks them).

Their state-value and behavioural-cloning models are the same transformer with the same
parameter names, read at the last state token (their sequences are [state, return bucket] and
[state, action], shifted right behind BOS: 78 positions): oneply's ``sv`` and ``bc`` predictors.
The same table gives ``state_embed`` and ``bos`` (no ``move_embed``: they have no move token),
``pos_embed`` is rows 0..77 of their learned positions (their table has 79 rows for every
policy; row 78 is never read), and the head has 128 outputs (sv) or 1968, one per action (bc).
A state-value tree is identical to an action-value one, so which of the two a checkpoint is
comes from the folder name (``…state_value``, ``…behavioral_cloning``, as their download
names them) or ``--predictor``; a 1968-output head is behavioural cloning whatever the name.

A checkpoint that is not this architecture fails with a message: another size, a missing or
extra parameter (e.g. QK-LayerNorm, sinusoidal positions, no final LayerNorm), a wrong shape,
or a head that contradicts the predictor asked for — never a silently wrong model file.
"""

from __future__ import annotations

import argparse
import logging
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np

from oneply.engine.errors import CommandError
from oneply.engine.facts.moves import NUM_MOVES
from oneply.engine.facts.tokenizer import STATE_LENGTH, VOCAB_SIZE
from oneply.engine.model.architecture import PREDICTORS
from oneply.engine.model.graph import build_model
from oneply.engine.model.model_file import ModelInfo
from oneply.engine.model.values import NUM_BINS
from oneply.training.model.export import save_model

REPOSITORY = "google-deepmind/searchless_chess"
#: their sequence: BOS, 77 state tokens, the action
SEQUENCE_LENGTH = STATE_LENGTH + 2
WIDENING = 4
PUBLISHED_STEP = 6_400_000
INSTALL_HINT = "pip install 'oneply[dm]'"
DOWNLOAD_HINT = (
    "download them with the searchless_chess repository's checkpoints/download.sh and pass "
    "e.g. checkpoints/9M"
)
#: their policy names (src/engines/neural_engines.py ENGINE_FROM_POLICY) → oneply predictors
POLICIES = {"action_value": "av", "state_value": "sv", "behavioral_cloning": "bc"}
POLICY_NAMES = {predictor: policy for policy, predictor in POLICIES.items()}


@dataclass(frozen=True)
class DMSize:
    layers: int
    heads: int
    width: int


#: the published action-value models (their src/engines/constants.py)
SIZES: dict[str, DMSize] = {
    "9M": DMSize(layers=8, heads=8, width=256),
    "136M": DMSize(layers=8, heads=8, width=1024),
    "270M": DMSize(layers=16, heads=8, width=1024),
}


class DMImportError(CommandError):
    """A checkpoint that cannot be imported; the message says why and what to do."""


def _indexed(module: str, index: int) -> str:
    """haiku's name for the index-th module of a kind at top level: name, name_1, name_2 …"""
    return module if index == 0 else f"{module}_{index}"


def _attention(layer: int, linear: int) -> str:
    return f"{_indexed('multi_head_dot_product_attention', layer)}/{_indexed('linear', linear)}"


def expected_shapes(
    size: DMSize, num_bins: int = NUM_BINS, predictor: str = "av"
) -> dict[str, tuple[int, ...]]:
    """Every parameter of their transformer of `size` for a predictor (av, sv: `num_bins`
    outputs; bc: one per action), as "module/param" → shape."""
    d, hidden = size.width, size.width * WIDENING
    outputs = NUM_MOVES if predictor == "bc" else num_bins
    shapes: dict[str, tuple[int, ...]] = {
        "embed/embeddings": (NUM_MOVES, d),
        "embed_1/embeddings": (SEQUENCE_LENGTH, d),
    }
    for norm in range(2 * size.layers + 1):
        shapes[f"{_indexed('layer_norm', norm)}/scale"] = (d,)
        shapes[f"{_indexed('layer_norm', norm)}/offset"] = (d,)
    for i in range(size.layers):
        for linear in range(4):
            shapes[f"{_attention(i, linear)}/w"] = (d, d)
        shapes[f"{_indexed('linear', 3 * i)}/w"] = (d, hidden)
        shapes[f"{_indexed('linear', 3 * i + 1)}/w"] = (d, hidden)
        shapes[f"{_indexed('linear', 3 * i + 2)}/w"] = (hidden, d)
    head = _indexed("linear", 3 * size.layers)
    shapes[f"{head}/w"] = (d, outputs)
    shapes[f"{head}/b"] = (outputs,)
    return shapes


def infer_predictor(
    shapes: dict[str, tuple[int, ...]], size: DMSize, folder: str = "", requested: str | None = None
) -> str:
    """Which of their policies a checkpoint is (as a oneply predictor): --predictor, else the
    folder's name, else behavioural cloning for a 1968-output head, else action value.
    DMImportError when these disagree."""
    if requested is not None and requested not in PREDICTORS:
        raise DMImportError(
            f"unknown predictor {requested!r}: choose from {', '.join(PREDICTORS)}."
        )
    named = next((p for policy, p in POLICIES.items() if policy in folder.lower()), None)
    head = shapes.get(f"{_indexed('linear', 3 * size.layers)}/w", ())
    policy_head = tuple(head[-1:]) == (NUM_MOVES,)
    if requested and named and requested != named:
        raise DMImportError(
            f"--predictor {requested}, but the folder {folder!r} holds {POLICY_NAMES[named]} "
            f"weights ({named}). Check that the folder holds the model you meant."
        )
    chosen = requested or named or ("bc" if policy_head else "av")
    how = "--predictor" if requested else f"the folder name {folder!r}" if named else "the head"
    if policy_head and chosen != "bc":
        raise DMImportError(
            f"the head has {NUM_MOVES} outputs, one per action: this is a behavioural-cloning "
            f"model, but {how} says {POLICY_NAMES[chosen]}. Pass --predictor bc."
        )
    if chosen == "bc" and head and not policy_head:
        raise DMImportError(
            f"{how} says behavioural cloning, but the head has {head[-1]} outputs (a value "
            f"head: action or state value, not {NUM_MOVES} actions)."
        )
    return chosen


def infer_size(
    shapes: dict[str, tuple[int, ...]], requested: str | None = None, folder: str = ""
) -> str:
    """The published size whose parameters these are; DMImportError when none fits."""
    known = ", ".join(SIZES)
    if requested is not None and requested not in SIZES:
        raise DMImportError(f"unknown size {requested!r}: the published sizes are {known}.")
    embed = shapes.get("embed/embeddings")
    if embed is None or len(embed) != 2:
        raise DMImportError(
            "the checkpoint has no token embedding 'embed/embeddings' [1968, D]: not a "
            f"searchless_chess transformer ({DOWNLOAD_HINT})."
        )
    width = embed[1]
    layers = len({k.split("/")[0] for k in shapes if k.startswith("multi_head_dot_product")})
    found = [name for name, s in SIZES.items() if (s.layers, s.width) == (layers, width)]
    if not found:
        raise DMImportError(
            f"unknown size: the checkpoint has {layers} layers of width {width}; the published "
            f"action-value sizes are "
            + ", ".join(f"{n} ({s.layers} layers, width {s.width})" for n, s in SIZES.items())
            + "."
        )
    name = found[0]
    for claimed, how in ((requested, "--size"), (folder if folder in SIZES else None, "folder")):
        if claimed is not None and claimed != name:
            raise DMImportError(
                f"{how} says {claimed}, but the checkpoint's parameters are those of {name} "
                f"({layers} layers, width {width}). Check that the folder holds the model you "
                "meant."
            )
    return name


def check_shapes(shapes: dict[str, tuple[int, ...]], size: DMSize, predictor: str = "av") -> None:
    """DMImportError naming every missing, unexpected or misshapen parameter."""
    expected = expected_shapes(size, predictor=predictor)
    problems = [f"missing {k} {v}" for k, v in expected.items() if k not in shapes]
    problems += [f"unexpected {k} {v}" for k, v in shapes.items() if k not in expected]
    problems += [
        f"{k} has shape {shapes[k]}, expected {v}"
        for k, v in expected.items()
        if k in shapes and tuple(shapes[k]) != v
    ]
    if problems:
        shown = "; ".join(problems[:8]) + (
            f"; … {len(problems) - 8} more" if len(problems) > 8 else ""
        )
        outputs = f"{NUM_MOVES} actions" if predictor == "bc" else f"{NUM_BINS} bins"
        raise DMImportError(
            f"the checkpoint is not the published {POLICY_NAMES[predictor].replace('_', '-')} "
            f"transformer (learned positions, final LayerNorm, no QK-LayerNorm, {outputs}): "
            f"{shown}."
        )


def oneply_weights(
    params: dict[str, np.ndarray], size: DMSize, predictor: str = "av"
) -> dict[str, np.ndarray]:
    """Their parameters ("module/param" → array) under engine/model/graph.py's names (sv, bc: no
    move embedding, the positions of [BOS, state] only)."""
    f32 = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    # √D is a power of two for every published width, so the fold is exact.
    table = f32["embed/embeddings"] * np.float32(math.sqrt(size.width))
    weights = {
        "bos": table[0].copy(),
        "state_embed.weight": table[:VOCAB_SIZE].copy(),
        "pos_embed": f32["embed_1/embeddings"],
    }
    if predictor == "av":
        weights["move_embed.weight"] = table
    else:
        weights["pos_embed"] = weights["pos_embed"][: STATE_LENGTH + 1].copy()

    def norm(name: str, index: int) -> None:
        weights[f"{name}.weight"] = f32[f"{_indexed('layer_norm', index)}/scale"]
        weights[f"{name}.bias"] = f32[f"{_indexed('layer_norm', index)}/offset"]

    for i in range(size.layers):
        p = f"blocks.{i}"
        norm(f"{p}.ln1", 2 * i)
        norm(f"{p}.ln2", 2 * i + 1)
        weights[f"{p}.qkv.weight"] = np.concatenate(
            [f32[f"{_attention(i, j)}/w"] for j in range(3)], axis=1
        )
        weights[f"{p}.proj.weight"] = f32[f"{_attention(i, 3)}/w"]
        weights[f"{p}.mlp.w13.weight"] = np.concatenate(
            [f32[f"{_indexed('linear', 3 * i + j)}/w"] for j in range(2)], axis=1
        )
        weights[f"{p}.mlp.w2.weight"] = f32[f"{_indexed('linear', 3 * i + 2)}/w"]
    norm("final_ln", 2 * size.layers)
    head = _indexed("linear", 3 * size.layers)
    weights["head.weight"] = f32[f"{head}/w"]
    weights["head.bias"] = f32[f"{head}/b"]
    return weights


# --- reading their checkpoint folder (orbax) -------------------------------------------------


def _is_orbax_item(path: Path) -> bool:
    return any((path / marker).exists() for marker in ("_METADATA", "checkpoint", "manifest.ocdbt"))


def locate_params(
    path: Path, step: int | None = None, ema: bool = False
) -> tuple[Path, int | None]:
    """The orbax params folder inside what the user passed, and its step.

    Accepts the model folder (``checkpoints/9M``: the latest step, or `step`), a step folder
    (``checkpoints/9M/6400000``) or the params folder itself.
    """
    item = "params_ema" if ema else "params"
    if not path.exists():
        raise DMImportError(f"{path} does not exist; {DOWNLOAD_HINT}.")
    if not path.is_dir():
        raise DMImportError(f"{path} is not a folder; {DOWNLOAD_HINT}.")
    if _is_orbax_item(path):
        return path, int(path.parent.name) if path.parent.name.isdigit() else None
    if (path / item).is_dir():
        return path / item, int(path.name) if path.name.isdigit() else None
    steps = sorted(int(p.name) for p in path.iterdir() if p.is_dir() and p.name.isdigit())
    if not steps:
        raise DMImportError(
            f"no checkpoint in {path}: expected {path}/<step>/{item} (their download unzips to "
            f"checkpoints/9M/{PUBLISHED_STEP}/params); {DOWNLOAD_HINT}."
        )
    chosen = steps[-1] if step is None else step
    if chosen not in steps:
        raise DMImportError(
            f"step {chosen} not in {path} (it has {', '.join(map(str, steps))}); "
            "pass one of those with --step."
        )
    params = path / str(chosen) / item
    if not params.is_dir():
        raise DMImportError(f"{path / str(chosen)} has no '{item}' folder; {DOWNLOAD_HINT}.")
    return params, chosen


def _orbax() -> ModuleType:
    try:
        logging.getLogger("absl").setLevel(logging.ERROR)  # "metadata file does not exist" nags
        import orbax.checkpoint as ocp
    except ImportError:
        raise DMImportError(
            f"reading DeepMind checkpoints needs orbax-checkpoint: {INSTALL_HINT}."
        ) from None
    return cast(ModuleType, ocp)


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        flat.update(_flatten(value, name) if isinstance(value, dict) else {name: value})
    return flat


def _tree_of(metadata: object) -> object:
    """The parameter tree inside orbax's metadata (None when it could not be read)."""
    tree = getattr(metadata, "item_metadata", metadata)
    return getattr(tree, "tree", tree)


def read_shapes(params_dir: Path) -> dict[str, tuple[int, ...]] | None:
    """Parameter shapes from the checkpoint's tree metadata, without reading the weights (a
    wrong model is refused before 1 GB is read); None for a layout without tree metadata."""
    ocp = _orbax()
    try:
        with ocp.PyTreeCheckpointer() as checkpointer:
            tree = _tree_of(checkpointer.metadata(params_dir))
    except Exception as error:  # orbax raises several types for unreadable folders
        raise DMImportError(f"{params_dir}: cannot read the orbax checkpoint ({error}).") from None
    if not isinstance(tree, dict):
        return None
    return {k: tuple(getattr(v, "shape", ())) for k, v in _flatten(dict(tree)).items()}


def read_params(params_dir: Path) -> dict[str, np.ndarray]:
    """Every parameter as a numpy array, "module/param" → array."""
    ocp = _orbax()
    import jax

    try:
        with ocp.PyTreeCheckpointer() as checkpointer:
            tree = _tree_of(checkpointer.metadata(params_dir))
            if isinstance(tree, dict):
                restore_args = jax.tree_util.tree_map(
                    lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree
                )
                params = checkpointer.restore(params_dir, restore_args=restore_args)
            else:  # no tree metadata (an older orbax layout): orbax picks the array type
                with warnings.catch_warnings():  # "sharding info not provided": CPU is fine
                    warnings.simplefilter("ignore", UserWarning)
                    params = checkpointer.restore(params_dir)
    except Exception as error:  # a truncated download fails here, in orbax's or tensorstore's words
        raise DMImportError(
            f"{params_dir}: cannot read the orbax checkpoint ({error}). A partial download? "
            "Unzip it again."
        ) from None
    if not isinstance(params, dict):
        raise DMImportError(f"{params_dir}: not a parameter tree ({type(params).__name__}).")
    flat = {k: np.asarray(v) for k, v in _flatten(params).items()}
    # bfloat16 (ml_dtypes, kind "V") is floating point too; it widens to float32 exactly
    bad = [k for k, v in flat.items() if v.dtype.kind != "f" and v.dtype.name != "bfloat16"]
    if bad:
        raise DMImportError(f"{params_dir}: parameters that are not floating point: {bad[:5]}.")
    return flat


# --- the import ----------------------------------------------------------------------------


def import_checkpoint(
    checkpoint: str | Path,
    output: str | Path,
    *,
    size: str | None = None,
    step: int | None = None,
    ema: bool = False,
    int8: bool = False,
    predictor: str | None = None,
) -> ModelInfo:
    """Read one of their checkpoints and write it as a oneply model file: an action-value
    model as a per_move file, a state-value or behavioural-cloning one as an sv or bc file
    (`predictor`: None reads it from the folder name and the head)."""
    path = Path(checkpoint).expanduser()
    params_dir, found_step = locate_params(path, step, ema)
    model_folder = params_dir.parent.parent if found_step is not None else params_dir.parent
    folder = model_folder.name
    shapes = read_shapes(params_dir)
    if shapes is not None:
        early = SIZES[infer_size(shapes, size, folder=folder)]
        check_shapes(shapes, early, infer_predictor(shapes, early, folder, predictor))
    params = read_params(params_dir)
    shapes = {k: tuple(v.shape) for k, v in params.items()}
    name = infer_size(shapes, size, folder=folder)
    dm_size = SIZES[name]
    predictor = infer_predictor(shapes, dm_size, folder, predictor)
    check_shapes(shapes, dm_size, predictor)
    dtypes = sorted({str(np.asarray(v).dtype) for v in params.values()})
    av = predictor == "av"
    source = {
        "repository": REPOSITORY,
        "model": name,
        "policy": POLICY_NAMES[predictor],
        "checkpoint": f"{model_folder.name}/{found_step}/{params_dir.name}"
        if found_step is not None
        else params_dir.name,
        "step": found_step,
        "params": params_dir.name,
        "dtype": ",".join(dtypes),
        "tokens": "shared table [1968, D] for state characters, BOS (token 0) and actions, "
        "scaled by sqrt(D) (folded into the weights)",
        "positions": "learned [79, D]"
        if av
        else "learned [79, D], rows 0-77 kept (their sequence is [BOS, state]: 78 positions)",
        "read_at": "the action token" if av else "the last state token",
        "normalisation": "pre-LayerNorm blocks (eps 1e-5) and a final LayerNorm",
        "bins": f"{NUM_BINS} uniform on [0, 1], centres (i + 0.5) / {NUM_BINS}",
        "license": "weights: CC BY 4.0; code: Apache 2.0 (see the searchless_chess README)",
    }
    config: dict[str, Any] = {
        "layers": dm_size.layers,
        "heads": dm_size.heads,
        "width": dm_size.width,
        "num_bins": NUM_BINS,
        "widening": WIDENING,
        "move_features": False,
    }
    if not av:
        config["predictor"] = predictor
    info = ModelInfo(
        path=Path(output),
        layout="per_move" if av else "shared",  # sv, bc: no layout, recorded as shared
        num_bins=NUM_BINS,
        preset=f"dm-{name.lower()}" if av else f"dm-{name.lower()}-{predictor}",
        config=config,
        trained=True,
        source=source,
    )
    proto = build_model(
        oneply_weights(params, dm_size, predictor), info.layout, info.config, info.to_metadata()
    )
    return save_model(proto, output, info, int8)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checkpoint",
        help="their checkpoint folder, e.g. checkpoints/9M (or checkpoints/9M/6400000[/params])",
    )
    parser.add_argument("-o", "--output", required=True, help="ONNX model file to write")
    parser.add_argument(
        "--size", choices=list(SIZES), help="expected size (default: read from the shapes)"
    )
    parser.add_argument("--step", type=int, help="checkpoint step (default: the latest)")
    parser.add_argument(
        "--predictor",
        choices=PREDICTORS,
        help="av (action value), sv (state value) or bc (behavioural cloning); default: from "
        "the folder name (9M_state_value, 9M_behavioral_cloning) and the head, else av",
    )
    parser.add_argument(
        "--ema", action="store_true", help="import params_ema (their engine plays params)"
    )
    parser.add_argument("--int8", action="store_true", help="dynamically quantize weights to int8")


def run(args: argparse.Namespace) -> int:
    info = import_checkpoint(
        args.checkpoint,
        args.output,
        size=args.size,
        step=args.step,
        ema=args.ema,
        int8=args.int8,
        predictor=args.predictor,
    )
    print(f"wrote {args.output}: {info.describe()}; from {info.source['checkpoint']}")
    return 0

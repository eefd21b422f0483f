"""`oneply import-dm CHECKPOINT_DIR -o FILE.onnx`: DeepMind's published searchless_chess
action-value checkpoints (9M, 136M, 270M) → oneply model files.

Their network (google-deepmind/searchless_chess, src/transformer.py, built by
src/engines/constants.py) reads [BOS, 77 state tokens, action] with full attention and reads
the value at the action: oneply's ``per_move`` layout. Their checkpoint is an orbax params tree
of a haiku model. Every parameter maps onto engine/graph.py's weights without approximation:

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
SwiGLU and the final log-softmax are what engine/graph.py computes already. Their tokenizer
and action vocabulary are oneply's (docs/FORMAT.md §1-2; tests/training/test_dm_import.py
checks them).

A checkpoint that is not this architecture fails with a message: another size, a missing or
extra parameter (e.g. QK-LayerNorm, sinusoidal positions, no final LayerNorm), a wrong shape,
or a state-value / behavioural-cloning model — never a silently wrong model file.
"""

from __future__ import annotations

import argparse
import logging
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oneply.engine.errors import CommandError
from oneply.engine.graph import build_model
from oneply.engine.model_file import ModelInfo
from oneply.engine.moves import NUM_MOVES
from oneply.engine.tokenizer import STATE_LENGTH, VOCAB_SIZE
from oneply.engine.values import NUM_BINS
from oneply.training.export import save_model

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
OTHER_POLICIES = {
    "state_value": "a state-value model (it scores positions, not moves)",
    "behavioral_cloning": "a behavioural-cloning model (it predicts moves, not values)",
}


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


def expected_shapes(size: DMSize, num_bins: int = NUM_BINS) -> dict[str, tuple[int, ...]]:
    """Every parameter of their action-value transformer of `size`, as "module/param" → shape."""
    d, hidden = size.width, size.width * WIDENING
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
    shapes[f"{head}/w"] = (d, num_bins)
    shapes[f"{head}/b"] = (num_bins,)
    return shapes


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


def check_shapes(shapes: dict[str, tuple[int, ...]], size: DMSize) -> None:
    """DMImportError naming every missing, unexpected or misshapen parameter."""
    expected = expected_shapes(size)
    head = f"{_indexed('linear', 3 * size.layers)}/w"
    if head in shapes and shapes[head][-1:] == (NUM_MOVES,):
        raise DMImportError(
            f"the head has {NUM_MOVES} outputs: this is {OTHER_POLICIES['behavioral_cloning']}. "
            "Only the action-value checkpoints (9M, 136M, 270M) can be played by oneply."
        )
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
        raise DMImportError(
            "the checkpoint is not the published action-value transformer (learned positions, "
            f"final LayerNorm, no QK-LayerNorm, {NUM_BINS} bins): {shown}."
        )


def oneply_weights(params: dict[str, np.ndarray], size: DMSize) -> dict[str, np.ndarray]:
    """Their parameters ("module/param" → array) under engine/graph.py's names."""
    f32 = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    # √D is a power of two for every published width, so the fold is exact.
    table = f32["embed/embeddings"] * np.float32(math.sqrt(size.width))
    weights = {
        "bos": table[0].copy(),
        "state_embed.weight": table[:VOCAB_SIZE].copy(),
        "move_embed.weight": table,
        "pos_embed": f32["embed_1/embeddings"],
    }

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


def _orbax():
    try:
        logging.getLogger("absl").setLevel(logging.ERROR)  # "metadata file does not exist" nags
        import orbax.checkpoint as ocp
    except ImportError:
        raise DMImportError(
            f"reading DeepMind checkpoints needs orbax-checkpoint: {INSTALL_HINT}."
        ) from None
    return ocp


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat: dict = {}
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
) -> ModelInfo:
    """Read one of their checkpoints and write it as a per_move oneply model file."""
    path = Path(checkpoint).expanduser()
    params_dir, found_step = locate_params(path, step, ema)
    model_folder = params_dir.parent.parent if found_step is not None else params_dir.parent
    for policy, what in OTHER_POLICIES.items():
        if policy in str(model_folder.name).lower():
            raise DMImportError(
                f"{model_folder} is {what}; only the action-value checkpoints (9M, 136M, 270M) "
                "can be played by oneply."
            )
    shapes = read_shapes(params_dir)
    if shapes is not None:
        check_shapes(shapes, SIZES[infer_size(shapes, size, folder=model_folder.name)])
    params = read_params(params_dir)
    shapes = {k: tuple(v.shape) for k, v in params.items()}
    name = infer_size(shapes, size, folder=model_folder.name)
    dm_size = SIZES[name]
    check_shapes(shapes, dm_size)
    dtypes = sorted({str(np.asarray(v).dtype) for v in params.values()})
    source = {
        "repository": REPOSITORY,
        "model": name,
        "policy": "action_value",
        "checkpoint": f"{model_folder.name}/{found_step}/{params_dir.name}"
        if found_step is not None
        else params_dir.name,
        "step": found_step,
        "params": params_dir.name,
        "dtype": ",".join(dtypes),
        "tokens": "shared table [1968, D] for state characters, BOS (token 0) and actions, "
        "scaled by sqrt(D) (folded into the weights)",
        "positions": "learned [79, D]",
        "normalisation": "pre-LayerNorm blocks (eps 1e-5) and a final LayerNorm",
        "bins": f"{NUM_BINS} uniform on [0, 1], centres (i + 0.5) / {NUM_BINS}",
        "license": "weights: CC BY 4.0; code: Apache 2.0 (see the searchless_chess README)",
    }
    info = ModelInfo(
        path=Path(output),
        layout="per_move",
        num_bins=NUM_BINS,
        preset=f"dm-{name.lower()}",
        config={
            "layers": dm_size.layers,
            "heads": dm_size.heads,
            "width": dm_size.width,
            "num_bins": NUM_BINS,
            "widening": WIDENING,
            "move_features": False,
        },
        trained=True,
        source=source,
    )
    proto = build_model(
        oneply_weights(params, dm_size), "per_move", info.config, info.to_metadata()
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
        "--ema", action="store_true", help="import params_ema (their engine plays params)"
    )
    parser.add_argument("--int8", action="store_true", help="dynamically quantize weights to int8")


def run(args: argparse.Namespace) -> int:
    info = import_checkpoint(
        args.checkpoint, args.output, size=args.size, step=args.step, ema=args.ema, int8=args.int8
    )
    print(f"wrote {args.output}: {info.describe()}; from {info.source['checkpoint']}")
    return 0

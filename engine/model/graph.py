"""Builds the model's ONNX graph from a dict of weights, for either attention layout.

This is the one definition of the inference graph. `oneply export` feeds it a trained PyTorch
checkpoint's weights; `oneply bench` feeds it the weights read back from a shipped `shared`
model to get the `per_move` baseline for the very same weights. It mirrors
training/model/model.py operation by operation (tests check parity to 1e-4).

Weights use the PyTorch parameter names; Linear weights are stored transposed ([in, out]) so
they feed MatMul directly. Graph contract (docs/FORMAT.md §4):

* input ``state``: int64 [B, 77] state tokens;
* input ``moves``: int64 [B, N] move ids, padding marked by -1 (any negative id);
* input ``square_facts``: int64 [B, 64, S] and ``move_facts``: int64 [B, N, M], only in models
  that read hand-computed facts (config ``features``, engine/facts/features.py, format version 4);
* output ``log_probs``: float32 [B, N, K]; rows of padded slots are meaningless.

Models of the paper's other predictors (config ``predictor``, format version 5) read the state
alone, [BOS, 77 state tokens] with full attention, and apply the head to the last state token:
``sv`` has no ``moves`` input and gives ``log_probs`` [B, K], the position's value bins for the
side to move; ``bc`` gives ``log_probs`` [B, N], the log-softmax over the given moves of the
head's logits for their ids (padded slots get nothing). Neither has a layout: both build the
same graph.

The attention biases of the board's geometry (config ``square_bias``, ``smolgen``,
``move_bias``; format version 6) are added to the scores by engine/model/attention_bias.py.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from oneply.engine.facts.features import (
    MOVE_FACTS,
    SQUARE_FACTS,
    TOKEN_SQUARE,
    Fact,
    channels,
    table_offsets,
)
from oneply.engine.facts.moves import MOVE_FROM, MOVE_PROMOTION, MOVE_TO
from oneply.engine.facts.tokenizer import FIELDS, SQUARE_TOKEN, STATE_LENGTH
from oneply.engine.model.architecture import PAD_LOGIT, check_weights, structure
from oneply.engine.model.attention_bias import AttentionBias
from oneply.engine.model.mirror import (
    BLACK_TOKEN,
    CASTLING_BIT,
    MIRROR_MOVE,
    STATE_MAP_FLAT,
    STATE_MAP_OFFSET,
    STATE_SOURCE,
)

OPSET = 17
PREFIX = STATE_LENGTH + 1
BOARD_START = 1 + int(SQUARE_TOKEN.min())  # sequence position of the first board token
LAYOUTS = ("shared", "per_move")


class _Graph:
    """Tiny helper that names intermediate values and collects nodes and initializers."""

    def __init__(self, weights: Mapping[str, np.ndarray]):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers = [
            numpy_helper.from_array(np.asarray(w, dtype=np.float32), name)
            for name, w in weights.items()
        ]
        self._count = 0

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """One node with one output; returns the output's name."""
        return self.ops(op_type, *inputs, outputs=1, **attrs)[0]

    def ops(self, op_type: str, *inputs: str, outputs: int, **attrs: Any) -> list[str]:
        """One node with several outputs (Split); returns their names."""
        names = [f"{op_type.lower()}_{self._count}_{i}" for i in range(outputs)]
        self._count += 1
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names

    def const(self, value: Any, dtype: type[np.generic] = np.int64) -> str:
        name = f"const_{self._count}"
        self._count += 1
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name


class _Builder:
    def __init__(self, weights: Mapping[str, np.ndarray], config: Mapping[str, Any]):
        self.g = _Graph(weights)
        parts = structure(config)  # engine/model/architecture.py: which optional parts there are
        self.features: tuple[str, ...] = parts["features"]
        self.predictor: str = parts["predictor"]
        #: [B, 1] bool "black to move" of the real position, set by mirror()
        self.black: str | None = None
        self.heads = int(config["heads"])
        self.layers = int(config["layers"])
        self.width = int(weights["bos"].shape[0])
        self.head_dim = self.width // self.heads
        self.move_features = parts["move_features"]
        self.piece_features = parts["piece_features"]
        self.hidden = int(config.get("widening", 4)) * self.width  # the SwiGLU's inner width
        self.scale = self.g.const(1.0 / math.sqrt(self.head_dim), np.float32)
        self.bias = AttentionBias(self.g, parts, self.heads)  # engine/model/attention_bias.py

    def layer_norm(self, x: str, name: str) -> str:
        return self.g.op("LayerNormalization", x, f"{name}.weight", f"{name}.bias", epsilon=1e-5)

    def split_heads(self, x: str, prefix: str) -> list[str]:
        """[B, T, D] normalised input → q, k, v as [B, H, T, Dh]."""
        qkv = self.g.op("MatMul", x, f"{prefix}.qkv.weight")
        shape = self.g.const([0, 0, self.heads, self.head_dim])
        parts = self.g.ops("Split", qkv, self.g.const([self.width] * 3), axis=-1, outputs=3)
        return [
            self.g.op("Transpose", self.g.op("Reshape", p, shape), perm=[0, 2, 1, 3]) for p in parts
        ]

    def merge_heads(self, x: str, prefix: str) -> str:
        merged = self.g.op(
            "Reshape", self.g.op("Transpose", x, perm=[0, 2, 1, 3]), self.g.const([0, 0, -1])
        )
        return self.g.op("MatMul", merged, f"{prefix}.proj.weight")

    def attend(self, q: str, k: str, v: str, bias: str | None = None) -> str:
        """Scaled dot-product attention, `bias` (broadcast to [B, H, T, T]) added to the scores
        after scaling, as torch's scaled_dot_product_attention adds its attn_mask."""
        kt = self.g.op("Transpose", k, perm=[0, 1, 3, 2])
        scores = self.g.op("Mul", self.g.op("MatMul", q, kt), self.scale)
        if bias is not None:
            scores = self.g.op("Add", scores, bias)
        return self.g.op("MatMul", self.g.op("Softmax", scores, axis=-1), v)

    def mlp(self, x: str, prefix: str) -> str:
        h = self.g.op("MatMul", self.layer_norm(x, f"{prefix}.ln2"), f"{prefix}.mlp.w13.weight")
        hidden = self.g.const([self.hidden] * 2)
        gate, up = self.g.ops("Split", h, hidden, axis=-1, outputs=2)
        silu = self.g.op("Mul", gate, self.g.op("Sigmoid", gate))
        out = self.g.op("MatMul", self.g.op("Mul", silu, up), f"{prefix}.mlp.w2.weight")
        return self.g.op("Add", x, out)

    def mirror(self, state: str, moves: str) -> tuple[str, str]:
        """Config ``mirror``: rows with black to move → the colour-flipped position and moves
        (engine/model/mirror.py, the same operations as ActionValueModel._mirror); white
        rows pass."""
        flipped = self.mirror_state(state)
        return flipped, self.mirror_moves(moves)

    def mirror_moves(self, moves: str) -> str:
        """Each move id of a black row → the rank-flipped move's (after mirror_state)."""
        g = self.g
        assert self.black is not None
        flipped_moves = g.op("Gather", g.const(MIRROR_MOVE), g.op("Max", moves, g.const(0)))
        return g.op("Where", self.black, flipped_moves, moves)

    def mirror_state(self, state: str) -> str:
        """Rows with black to move → the colour-flipped position; sets ``black``."""
        g = self.g

        def field(name: str) -> str:  # [B, width] tokens of one field
            part = FIELDS[name]
            return g.op("Slice", state, g.const([part.start]), g.const([part.stop]), g.const([1]))

        castling = field("castling")
        code = g.op("ReduceSum", g.op("Gather", g.const(CASTLING_BIT), castling), g.const([1]))
        extended = g.op("Concat", state, code, axis=1)  # [B, 78]: state + castling code
        picked = g.op("Gather", extended, g.const(STATE_SOURCE), axis=1)
        flipped = g.op(
            "Gather", g.const(STATE_MAP_FLAT), g.op("Add", picked, g.const(STATE_MAP_OFFSET))
        )
        black = g.op("Equal", field("side"), g.const(BLACK_TOKEN))  # [B, 1]
        self.black = black
        return g.op("Where", black, flipped, state)

    def embed_state(self, state: str) -> str:
        """[B, 77] → [B, 78, D]: BOS + state embeddings + positions 0..77."""
        g = self.g
        tokens = g.op("Gather", "state_embed.weight", state)
        batch = g.op("Slice", g.op("Shape", state), g.const([0]), g.const([1]))
        bos_shape = g.op("Concat", batch, g.const([1, self.width]), axis=0)
        bos = g.op("Expand", g.op("Reshape", "bos", g.const([1, 1, self.width])), bos_shape)
        positions = g.op("Slice", "pos_embed", g.const([0]), g.const([PREFIX]), g.const([0]))
        x = g.op("Add", g.op("Concat", bos, tokens, axis=1), positions)
        if not channels(self.features, SQUARE_FACTS):
            return x
        squares = g.const(TOKEN_SQUARE)  # [64]: the square each board token shows
        if self.black is not None:  # turned over with the board (mirror_square)
            flipped = g.const(TOKEN_SQUARE ^ 56)
            black = g.op("Unsqueeze", self.black, g.const([2]))  # [B, 1, 1]
            facts = g.op(
                "Where",
                black,
                g.op("Gather", "square_facts", flipped, axis=1),
                g.op("Gather", "square_facts", squares, axis=1),
            )
        else:
            facts = g.op("Gather", "square_facts", squares, axis=1)
        embedded = self.facts(facts, SQUARE_FACTS, "square_fact_embed.weight")  # [B, 64, D]
        after = PREFIX - BOARD_START - 64
        pads = g.const([0, BOARD_START, 0, 0, after, 0])
        return g.op("Add", x, g.op("Pad", embedded, pads))

    def facts(self, facts: str, declared: Sequence[Fact], table: str) -> str:
        """[B, T, C] facts → [B, T, D]: the sum of the picked channels' embedding rows."""
        g = self.g
        offsets, _ = table_offsets(self.features, declared)
        picked = g.op("Gather", facts, g.const(channels(self.features, declared)), axis=2)
        rows = g.op("Gather", table, g.op("Add", picked, g.const(offsets)))  # [B, T, c, D]
        return g.op("ReduceSum", rows, g.const([2]), keepdims=0)

    def embed_moves(self, state: str, moves: str) -> str:
        """[B, N] ids → [B, N, D] embeddings at position 78; negative ids act as id 0.

        With the move features (weights ``from_embed`` …, see training/model/model.py) the token
        also gets its squares, its promotion and the state tokens on its from- and to-squares.
        """
        g = self.g
        ids = g.op("Max", moves, g.const(0))
        position = g.op("Gather", "pos_embed", g.const(PREFIX), axis=0)
        x = g.op("Add", g.op("Gather", "move_embed.weight", ids), position)
        if channels(self.features, MOVE_FACTS):
            x = g.op("Add", x, self.facts("move_facts", MOVE_FACTS, "move_fact_embed.weight"))
        if not self.move_features:
            return x
        start = g.op("Gather", g.const(MOVE_FROM), ids)
        end = g.op("Gather", g.const(MOVE_TO), ids)
        promotion = g.op("Gather", g.const(MOVE_PROMOTION), ids)
        for table, index in (("from_embed", start), ("to_embed", end), ("promo_embed", promotion)):
            x = g.op("Add", x, g.op("Gather", f"{table}.weight", index))
        for linear, square in (("from_piece", start), ("to_piece", end)):
            if not self.piece_features:
                break  # a squares-only ablation model
            tokens = g.op(
                "GatherElements", state, g.op("Gather", g.const(SQUARE_TOKEN), square), axis=1
            )
            piece = g.op("MatMul", g.op("Gather", "state_embed.weight", tokens), f"{linear}.weight")
            x = g.op("Add", x, piece)
        return x

    def head(self, x: str) -> str:
        logits = self.g.op("MatMul", self.layer_norm(x, "final_ln"), "head.weight")
        return self.g.op("LogSoftmax", self.g.op("Add", logits, "head.bias"), axis=-1)

    def shared(self, state: str, moves: str) -> str:
        g = self.g
        xs, xm = self.embed_state(state), self.embed_moves(state, moves)
        self.bias.set_moves(moves, flat=False)
        for i in range(self.layers):
            p = f"blocks.{i}"
            hs = self.layer_norm(xs, f"{p}.ln1")
            qs, ks, vs = self.split_heads(hs, p)
            qm, km, vm = self.split_heads(self.layer_norm(xm, f"{p}.ln1"), p)
            state_out = self.attend(qs, ks, vs, self.bias.board(hs, i, PREFIX))
            to_state = g.op("MatMul", qm, g.op("Transpose", ks, perm=[0, 1, 3, 2]))
            to_self = g.op("ReduceSum", g.op("Mul", qm, km), g.const([-1]), keepdims=1)
            scores = g.op("Mul", g.op("Concat", to_state, to_self, axis=-1), self.scale)
            move_bias = self.bias.moves_shared(i, PREFIX + 1)
            if move_bias is not None:
                scores = g.op("Add", scores, move_bias)
            weights = g.op("Softmax", scores, axis=-1)
            w_state = g.op("Slice", weights, g.const([0]), g.const([PREFIX]), g.const([-1]))
            w_self = g.op("Slice", weights, g.const([PREFIX]), g.const([PREFIX + 1]), g.const([-1]))
            move_out = g.op("Add", g.op("MatMul", w_state, vs), g.op("Mul", w_self, vm))
            xs = self.mlp(g.op("Add", xs, self.merge_heads(state_out, p)), p)
            xm = self.mlp(g.op("Add", xm, self.merge_heads(move_out, p)), p)
        return self.head(xm)

    def state_only(self, state: str, moves: str | None) -> str:
        """sv and bc: [BOS, state] with full attention, the head on the last state token."""
        g = self.g
        x = self.embed_state(state)  # [B, 78, D]
        for i in range(self.layers):
            p = f"blocks.{i}"
            h = self.layer_norm(x, f"{p}.ln1")
            q, k, v = self.split_heads(h, p)
            out = self.attend(q, k, v, self.bias.full(h, i, PREFIX))
            x = self.mlp(g.op("Add", x, self.merge_heads(out, p)), p)
        last = g.op("Gather", x, g.const(PREFIX - 1), axis=1)  # [B, D]
        logits = g.op("MatMul", self.layer_norm(last, "final_ln"), "head.weight")
        logits = g.op("Add", logits, "head.bias")  # [B, K] or [B, NUM_MOVES]
        if moves is None:
            return g.op("LogSoftmax", logits, axis=-1)
        ids = self.mirror_moves(moves) if self.black is not None else moves
        picked = g.op("GatherElements", logits, g.op("Max", ids, g.const(0)), axis=1)  # [B, N]
        padded = g.op("Less", moves, g.const(0))
        picked = g.op("Where", padded, g.const(PAD_LOGIT, np.float32), picked)
        return g.op("LogSoftmax", picked, axis=-1)

    def per_move(self, state: str, moves: str) -> str:
        g = self.g
        moves_shape = g.op("Shape", moves)  # [B, N]
        xs = self.embed_state(state)  # [B, 78, D]
        tiled_shape = g.op("Concat", moves_shape, g.const([PREFIX, self.width]), axis=0)
        xs = g.op("Expand", g.op("Unsqueeze", xs, g.const([1])), tiled_shape)
        xs = g.op("Reshape", xs, g.const([-1, PREFIX, self.width]))
        xm = g.op("Reshape", self.embed_moves(state, moves), g.const([-1, 1, self.width]))
        x = g.op("Concat", xs, xm, axis=1)  # [B·N, 79, D]
        self.bias.set_moves(moves, flat=True)
        for i in range(self.layers):
            p = f"blocks.{i}"
            h = self.layer_norm(x, f"{p}.ln1")
            q, k, v = self.split_heads(h, p)
            out = self.attend(q, k, v, self.bias.full(h, i, PREFIX + 1))
            x = self.mlp(g.op("Add", x, self.merge_heads(out, p)), p)
        last = g.op("Gather", x, g.const(PREFIX), axis=1)  # [B·N, D]
        out_shape = g.op("Concat", moves_shape, g.const([-1]), axis=0)
        return g.op("Reshape", self.head(last), out_shape)


def build_model(
    weights: Mapping[str, np.ndarray],
    layout: str,
    config: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
) -> onnx.ModelProto:
    """The ONNX model for `layout` ('shared' or 'per_move') of a model with this `config`
    (ModelConfig fields) and these weights.

    The weights must be exactly those engine/model/architecture.py declares for the config. Some
    parts leave no trace in the weights (the side-to-move flip, which fact channels are read), so
    when the metadata carries a config it must describe the same structure: a rebuilt graph that
    silently dropped the flip would score every black move as if for the wrong colour.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
    check_weights(config, {name: tuple(w.shape) for name, w in weights.items()})
    recorded = json.loads((metadata or {}).get("oneply.config", "null"))
    if recorded is not None and structure(recorded) != structure(config):
        raise ValueError(
            f"build_model for {structure(config)} but the metadata config says "
            f"{structure(recorded)} (mirror and features must agree)"
        )
    builder = _Builder(weights, config)
    mirror = structure(config)["mirror"]
    num_bins = int(weights["head.bias"].shape[0])
    shape: list[str | int] = ["batch", "moves", num_bins]
    if builder.predictor == "av":
        inputs = builder.mirror("state", "moves") if mirror else ("state", "moves")
        output = getattr(builder, layout)(*inputs)
    else:
        state = builder.mirror_state("state") if mirror else "state"
        moves = "moves" if builder.predictor == "bc" else None
        output = builder.state_only(state, moves)
        shape = ["batch", "moves"] if moves else ["batch", num_bins]
    builder.g.nodes.append(helper.make_node("Identity", [output], ["log_probs"]))
    graph = helper.make_graph(
        builder.g.nodes,
        f"oneply_{layout}" if builder.predictor == "av" else f"oneply_{builder.predictor}",
        _inputs(builder),
        [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, shape)],
        builder.g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    helper.set_model_props(model, dict(metadata or {}))
    onnx.checker.check_model(model)
    return model


def _inputs(builder: _Builder) -> list[onnx.ValueInfoProto]:
    """state and moves (not for sv); the fact inputs only for a model that reads them."""
    inputs = [helper.make_tensor_value_info("state", TensorProto.INT64, ["batch", STATE_LENGTH])]
    if builder.predictor != "sv":
        inputs.append(helper.make_tensor_value_info("moves", TensorProto.INT64, ["batch", "moves"]))
    if channels(builder.features, SQUARE_FACTS):
        inputs.append(
            helper.make_tensor_value_info(
                "square_facts", TensorProto.INT64, ["batch", 64, "square_channels"]
            )
        )
    if channels(builder.features, MOVE_FACTS) and builder.predictor == "av":
        inputs.append(
            helper.make_tensor_value_info(
                "move_facts", TensorProto.INT64, ["batch", "moves", "move_channels"]
            )
        )
    return inputs


def weights_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The named weights of a model built by build_model (graph constants left out)."""
    return {
        init.name: numpy_helper.to_array(init)
        for init in model.graph.initializer
        if not init.name.startswith("const_")
    }


def quantize_int8(source: str | Path, target: str | Path) -> None:
    """Write a dynamically quantized (int8 weights, MatMul only) copy of a model file.

    Embeddings, LayerNorms and the head bias stay fp32: they are a small share of the compute
    and quantizing them costs accuracy for nothing.
    """
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # pre-proc nag

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "int8.onnx"
        quantize_dynamic(
            str(source),
            str(staged),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
        )
        model = onnx.load(str(staged))
    props = {
        p.key: p.value for p in onnx.load(str(source), load_external_data=False).metadata_props
    }
    props["oneply.quantization"] = "int8"
    helper.set_model_props(model, props)
    onnx.save(model, str(target))

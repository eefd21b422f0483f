"""Runs a model that reads move facts as two halves, the state half beside the move facts.

Why: scoring a position is three pieces of work in a row — the facts (python-chess, one core:
about 2 ms on the bench set), the network's state tokens and its move tokens. In the
``shared`` layout the state tokens attend only to each other (engine/model/graph.py), so the whole
state half of the network — every layer's keys and values of the 78 state tokens, about 60%
of its work — needs the square facts but not one move fact. This module cuts a model file's
graph there: the state half runs on a second core, its session releasing the GIL, while this
thread computes the move facts; then the move half reads both. On two cores that hides the
state half behind the facts (docs/studies/2026-12-04.md measures the time it saves). The
outputs are the one-graph outputs (the same operations, tests hold them to 1e-5); nothing in
the file changes.

The cut is found from the graph, not from the builder: a node belongs to the move half when
it reads, directly or through another node, an input that carries moves (``moves``,
``move_facts``); every other node is the state half's. The tensors that cross — keys and
values of each layer, the side-to-move flag, the mirrored state — become the state half's
outputs and the move half's inputs. So fp32 and int8 files alike split, and any graph that
engine/model/graph.py builds.

One detail makes it work: a Python thread busy with the facts gives up the GIL only every
``sys.getswitchinterval()`` (5 ms), and the worker needs the GIL for a moment to enter the
session's ``run``. So the caller waits until the worker has started, which costs about 0.1 ms,
instead of finding the state half not yet begun when the facts are done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

#: the graph inputs that carry moves: whatever reads them runs in the move half
MOVE_INPUTS = frozenset({"moves", "move_facts"})

#: onnxruntime's names of the tensor types that cross the cut
_TENSOR_TYPES = {
    "tensor(float)": TensorProto.FLOAT,
    "tensor(float16)": TensorProto.FLOAT16,
    "tensor(int64)": TensorProto.INT64,
    "tensor(bool)": TensorProto.BOOL,
}


class SplitError(ValueError):
    """A graph that cannot be run as two halves (the caller runs it whole)."""


@dataclass(frozen=True)
class Halves:
    """A model cut in two: serialized ONNX models and the names of the tensors between them."""

    state: onnx.ModelProto  # inputs: the state inputs; outputs: `crossing`
    moves: onnx.ModelProto  # inputs: the graph inputs it reads and `crossing`; output: log_probs
    crossing: tuple[str, ...]


def _sub_model(
    model: onnx.ModelProto,
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    name: str,
) -> onnx.ModelProto:
    read = {name for node in nodes for name in node.input}
    initializers = [init for init in model.graph.initializer if init.name in read]
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), initializers)
    return helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)


def _needed(nodes: Sequence[onnx.NodeProto], wanted: set[str]) -> list[onnx.NodeProto]:
    """The nodes (in graph order) that `wanted` tensors depend on."""
    kept: list[onnx.NodeProto] = []
    for node in reversed(nodes):
        if wanted & set(node.output):
            kept.append(node)
            wanted |= set(node.input)
    return kept[::-1]


def split(model: onnx.ModelProto) -> Halves:
    """`model` cut into its state half and its move half (module docstring). The move half's
    inputs for the crossing tensors are left untyped here; :func:`type_crossing` types them
    from the state half's session."""
    graph = model.graph
    names = {value.name for value in graph.input}
    if "move_facts" not in names or len(graph.output) != 1:
        raise SplitError("only a model that reads move facts has work to overlap")
    moving = set(MOVE_INPUTS & names)
    state_nodes, move_nodes = [], []
    for node in graph.node:
        if moving & set(node.input):
            moving.update(node.output)
            move_nodes.append(node)
        else:
            state_nodes.append(node)
    made = {name for node in state_nodes for name in node.output}
    crossing = sorted({name for node in move_nodes for name in node.input if name in made})
    if not crossing:
        raise SplitError("the move half reads nothing of the state half")
    state_inputs = {name for node in state_nodes for name in node.input}
    state = _sub_model(
        model,
        _needed(state_nodes, set(crossing)),
        [value for value in graph.input if value.name in state_inputs - MOVE_INPUTS],
        [onnx.ValueInfoProto(name=name) for name in crossing],  # onnxruntime infers the types
        "state_half",
    )
    move_reads = {name for node in move_nodes for name in node.input}
    moves = _sub_model(
        model,
        move_nodes,
        [value for value in graph.input if value.name in move_reads],
        list(graph.output),
        "move_half",
    )
    return Halves(state, moves, tuple(crossing))


def type_crossing(halves: Halves, state_session: ort.InferenceSession) -> onnx.ModelProto:
    """The move half with its crossing inputs typed as the state half's session gives them."""
    types = {out.name: out.type for out in state_session.get_outputs()}
    unknown = {types[name] for name in halves.crossing} - set(_TENSOR_TYPES)
    if unknown:
        raise SplitError(f"cannot pass tensors of type {sorted(unknown)} between the halves")
    moves = onnx.ModelProto()
    moves.CopyFrom(halves.moves)
    moves.graph.input.extend(
        helper.make_tensor_value_info(name, _TENSOR_TYPES[types[name]], None)
        for name in halves.crossing
    )
    return moves


class SplitSession:
    """The two halves of one model file as onnxruntime sessions, and the thread that runs the
    state half: :meth:`run` takes the state inputs and a function that computes the rest."""

    def __init__(
        self,
        model: onnx.ModelProto,
        threads: int,
        providers: Sequence[str],
        options: Callable[[int], ort.SessionOptions],
    ):
        """`threads`: the cores to use in all (at least 2): one stays with the caller for the
        move facts, the state half gets the others, the move half runs alone and gets them
        all. `options(n)`: session options for n threads."""
        halves = split(model)
        self.crossing = halves.crossing
        self.state = ort.InferenceSession(
            halves.state.SerializeToString(), options(max(1, threads - 1)), providers=providers
        )
        self.moves = ort.InferenceSession(
            type_crossing(halves, self.state).SerializeToString(),
            options(1),
            providers=providers,
        )
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oneply-state-half")

    def _start(self, feeds: dict[str, np.ndarray]) -> Future[list[np.ndarray]]:
        started = threading.Event()

        def job() -> list[np.ndarray]:
            started.set()
            outputs: list[np.ndarray] = self.state.run(list(self.crossing), feeds)  # untyped
            return outputs

        pending = self._worker.submit(job)
        started.wait()  # the module docstring: the worker must hold the GIL to get going
        return pending

    def run(
        self,
        state_feeds: dict[str, np.ndarray],
        move_feeds: Callable[[], dict[str, np.ndarray]],
    ) -> np.ndarray:
        """log_probs of the whole model: the state half on the worker with `state_feeds`
        while this thread computes `move_feeds()` (the move ids and move facts), then the
        move half. The state inputs the move half also reads are passed on."""
        pending = self._start(state_feeds)
        feeds = move_feeds()
        crossing = dict(zip(self.crossing, pending.result(), strict=True))
        wanted = {value.name for value in self.moves.get_inputs()}
        passed = {name: array for name, array in state_feeds.items() if name in wanted}
        log_probs: np.ndarray = self.moves.run(["log_probs"], {**feeds, **passed, **crossing})[0]
        return log_probs

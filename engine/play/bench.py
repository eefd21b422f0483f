"""`oneply bench`: inference speed of the two layouts and of int8, for the same weights.

On a fixed, committed set of positions (engine/data/bench_positions.txt: openings,
middlegames, endgames and the 218-move position) it times one session run per position for

* ``shared_fp32``  — the fp32 model file (by default the bundled weights in fp32,
  models/oneply-small-fp32.onnx);
* ``shared_int8``  — the same weights dynamically quantized (engine/model/graph.py): for the
  bundled weights, the file the engine plays (models/oneply-small.onnx);
* ``per_move_fp32`` — the same weights rebuilt in the paper's layout, one 79-token sequence per
  legal move (the baseline every public port of the paper runs).

and reports ms per position (median, p90), positions per second, the speedup of shared int8
over per_move fp32, and the accuracy cost of int8 (|Δ expected win| over every move).

Every row includes the model's inputs (state tokens, legal move ids and the facts), computed
by the compiled core when it is built (engine/facts/native.py) — the table's header says which path
ran. Side by side in the same run, on the same machine, the Python path of the same inputs:

* the inputs alone, per position, on each path (``inputs_ms_per_position``);
* ``shared_int8_python`` — the int8 file scored with the Python path of the facts;
* the search row's nodes per second on each path.

With two threads or more, a model that reads move facts can run as two halves, the state half
beside the move facts (engine/play/halves.py): the Python path does so by default and the
``shared_int8_whole`` row times its graph run whole; with the compiled core the one graph runs
and the ``shared_int8_halves`` row times the halves, what the overlap would still save.

The search row times the look-ahead (engine/play/search.py) on the int8 variant: nodes per second
over a spread of the positions, searching `--search-nodes` nodes from each, with SEARCH_BATCH
leaves per forward pass (virtual loss keeps the walks apart) and with one leaf per call.

A ``per_move`` file (an imported DeepMind model, `oneply import-dm`) cannot be rebuilt as
``shared``: its state tokens were trained to attend to the move. For it the variants are
``per_move_fp32`` (the file) and ``per_move_int8``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import numpy as np
import onnx
from tqdm import tqdm

from oneply.engine.errors import CommandError
from oneply.engine.facts import native
from oneply.engine.facts.encoding import encode_batch
from oneply.engine.facts.features import GROUPS, encode_facts
from oneply.engine.model.graph import build_model, quantize_int8, weights_of
from oneply.engine.model.model_file import (
    ENV_VAR,
    REFERENCE_MODEL,
    ModelFileError,
    add_model_argument,
)
from oneply.engine.play.inference import MoveScore, Scorer
from oneply.engine.play.search import Limits, TreeSearch, search_threads, searching_scorer

POSITIONS_FILE = Path(__file__).parent.parent / "data" / "bench_positions.txt"
VARIANTS = ("shared_fp32", "shared_int8", "per_move_fp32")
PER_MOVE_VARIANTS = ("per_move_fp32", "per_move_int8")
#: the int8 file with its graph run whole, beside the Python path's two halves
WHOLE_VARIANT = "shared_int8_whole"
#: the int8 file run as two halves beside the compiled core's one graph
HALVES_VARIANT = "shared_int8_halves"
#: the int8 file with the Python path of the facts
PYTHON_VARIANT = "shared_int8_python"
#: leaves per forward pass in the search row's batched run (TreeSearch's default)
SEARCH_BATCH = 8
#: positions the search row searches from, spread over the bench set
SEARCH_POSITIONS = 8
DEFAULT_SEARCH_NODES = 200


def load_positions(path: Path = POSITIONS_FILE, limit: int | None = None) -> list[chess.Board]:
    fens = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return [chess.Board(fen) for fen in fens[:limit]]


def build_variants(model_path: Path, workdir: Path) -> dict[str, Path]:
    """Model files for the variants (VARIANTS, or PER_MOVE_VARIANTS for a per_move file), all
    holding the weights of `model_path`, the file itself first."""
    proto = onnx.load(str(model_path))
    props = {p.key: p.value for p in proto.metadata_props}
    layout = props.get("oneply.layout")
    if layout not in ("shared", "per_move") or props.get("oneply.quantization") == "int8":
        raise ModelFileError(
            f"{model_path}: bench needs an fp32 model (it derives the int8 and per_move "
            "variants from its weights); export one with `oneply export`."
        )
    if layout == "per_move":
        paths = {"per_move_fp32": model_path, "per_move_int8": workdir / "int8.onnx"}
        quantize_int8(model_path, paths["per_move_int8"])
        return paths
    config = json.loads(props["oneply.config"])
    per_move = build_model(
        weights_of(proto), "per_move", config, {**props, "oneply.layout": "per_move"}
    )
    paths = {"shared_fp32": model_path, "shared_int8": workdir / "int8.onnx"}
    quantize_int8(model_path, paths["shared_int8"])
    paths["per_move_fp32"] = workdir / "per_move.onnx"
    onnx.save(per_move, str(paths["per_move_fp32"]))
    return paths


def time_variant(
    scorer: Scorer, boards: list[chess.Board], label: str
) -> tuple[list[float], list[dict[chess.Move, float]]]:
    """Milliseconds per position (one session run each) and the expected wins it produced."""
    times: list[float] = []
    wins: list[dict[chess.Move, float]] = []
    for board in tqdm(boards, desc=f"{label:<14}", unit="pos", leave=False, file=sys.stderr):
        start = time.perf_counter()
        scores = scorer.score(board)
        times.append((time.perf_counter() - start) * 1000)
        wins.append({s.move: s.win for s in scores})
    return times, wins


def time_inputs(boards: list[chess.Board], facts: Sequence[str]) -> list[float]:
    """Milliseconds per position to compute what the model reads — state tokens, legal move
    ids and the engine/facts/features.py facts it reads — alone (part of every scoring call), on
    whichever path is active."""
    times = []
    for board in boards:
        start = time.perf_counter()
        encode_batch([board], facts)
        times.append((time.perf_counter() - start) * 1000)
    return times


def inputs_row(boards: list[chess.Board], facts: Sequence[str]) -> dict[str, float]:
    """The inputs' median milliseconds per position on each path available, side by side."""
    row = {}
    if native.available():
        row["native"] = round(statistics.median(time_inputs(boards, facts)), 4)
    with native.python_path():
        row["python"] = round(statistics.median(time_inputs(boards, facts)), 4)
    if "native" in row and row["native"] > 0:
        row["speedup"] = round(row["python"] / row["native"], 1)
    return row


def facts_by_group(
    boards: list[chess.Board], facts: Sequence[str], rounds: int = 3
) -> dict[str, float]:
    """Milliseconds per position that each fact group adds to the facts a model reads: the
    facts timed with the group left out against all of them, every variant run on each
    position in turn (so this machine's drift from minute to minute falls on all alike), the
    positions `rounds` times over. What a researcher weighs against what a group buys."""
    groups = [group for group, names in GROUPS.items() if set(names) & set(facts)]
    variants = {"": tuple(facts)}
    variants |= {group: tuple(f for f in facts if f not in GROUPS[group]) for group in groups}
    totals = dict.fromkeys(variants, 0.0)
    for _ in range(rounds):
        for board in boards:
            moves = list(board.legal_moves)
            for name, wanted in variants.items():
                start = time.perf_counter()
                encode_facts([board], [moves], max(1, len(moves)), wanted)
                totals[name] += time.perf_counter() - start
    per_position = {name: total * 1000 / (rounds * len(boards)) for name, total in totals.items()}
    return {group: round(per_position[""] - per_position[group], 3) for group in groups}


def search_nps(
    scorer: Scorer, boards: list[chess.Board], nodes: int, batch: int, parallel: int = 1
) -> float:
    """Nodes per second of a fresh search of `nodes` nodes from each board, `batch` leaves
    per forward pass, `parallel` passes at once."""
    total_nodes, total_seconds = 0, 0.0
    for board in tqdm(boards, desc=f"search x{batch:<5}", unit="pos", leave=False, file=sys.stderr):
        tree = TreeSearch(scorer, batch=batch, parallel=parallel)
        start = time.perf_counter()
        info = tree.search(board, Limits(nodes=nodes))
        total_seconds += time.perf_counter() - start
        total_nodes += info.nodes
    return total_nodes / total_seconds if total_seconds > 0 else 0.0


def search_positions(boards: list[chess.Board]) -> list[chess.Board]:
    """SEARCH_POSITIONS boards spread through the bench set (each with a legal move)."""
    step = max(1, len(boards) // SEARCH_POSITIONS)
    return [b for b in boards[::step] if any(b.legal_moves)][:SEARCH_POSITIONS]


def search_row(
    scorer: Scorer, boards: list[chess.Board], nodes: int, threads: int = 1
) -> dict[str, Any]:
    """The search row: nps with SEARCH_BATCH leaves per call, `parallel_for(threads)` calls at
    once (as the UCI engine searches), and with one leaf per call, one call at a time."""
    spread = search_positions(boards)
    per_call, parallel = search_threads(threads)
    searcher = searching_scorer(scorer, threads)
    batched = search_nps(searcher, spread, nodes, SEARCH_BATCH, parallel)
    single = search_nps(scorer, spread, nodes, 1)
    python = None
    if native.available():
        with native.python_path():
            python = round(search_nps(searcher, spread, nodes, SEARCH_BATCH, parallel), 1)
    return {
        "parallel": parallel,
        "threads_per_call": per_call,
        "model_variant": "",  # filled in by bench
        "positions": len(spread),
        "nodes_per_position": nodes,
        "batch": SEARCH_BATCH,
        "nps_batched": round(batched, 1),
        "nps_one_leaf": round(single, 1),
        "speedup_batched": round(batched / single, 2) if single > 0 else None,
        "nps_batched_python": python,
    }


def fp32_search_rows(
    fp32: Scorer, boards: list[chess.Board], nodes: int, threads: int
) -> dict[str, Any]:
    """The search's nps with the fp32 weights, beside the int8 row: on the compiled core, and on
    the Python path of the facts one call at a time — the engine before the core, the int8
    file and the parallel calls, the baseline the speedup is quoted against."""
    spread = search_positions(boards)
    parallel = search_threads(threads)[1]
    fp32_nps = search_nps(searching_scorer(fp32, threads), spread, nodes, SEARCH_BATCH, parallel)
    python = None
    if native.available():
        with native.python_path():
            python = search_nps(_PythonPathScorer(fp32.path, threads), spread, nodes, SEARCH_BATCH)
    return {
        "nps_fp32": round(fp32_nps, 1),
        "nps_fp32_python": None if python is None else round(python, 1),
    }


def extra_rows(base: Scorer, paths: dict[str, Path], threads: int) -> list[tuple[str, Scorer]]:
    """The rows beside the variants: the int8 file on the Python path, and with two threads
    the layout the default does not run (whole graph or two halves: engine/play/halves.py)."""
    if "shared_int8" not in paths:
        return []
    int8 = paths["shared_int8"]
    rows = []
    if base.overlapped:
        rows.append((WHOLE_VARIANT, Scorer(int8, threads=threads, overlap=False)))
    elif threads >= 2 and base.reads_facts and native.available():
        halves = Scorer(int8, threads=threads, overlap=True)
        if halves.overlapped:
            rows.append((HALVES_VARIANT, halves))
    if native.available():
        with native.python_path():
            rows.append((PYTHON_VARIANT, _PythonPathScorer(int8, threads)))
    return rows


class _PythonPathScorer(Scorer):
    """A Scorer that computes its inputs on the Python path whatever is built (its own
    default layout for that path: two halves with two threads or more)."""

    def __init__(self, model: Path, threads: int) -> None:
        with native.python_path():
            super().__init__(model, threads=threads)

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        with native.python_path():
            return super().score_many(boards)


def summarise(times: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(times),
        "p90": float(np.percentile(times, 90)),
        "positions_per_s": 1000 * len(times) / sum(times),
    }


def bench(
    model: str | None,
    threads: int,
    limit: int | None,
    search_nodes: int = DEFAULT_SEARCH_NODES,
    by_group: bool = False,
) -> dict[str, Any]:
    boards = load_positions(limit=limit)
    # the bundled file is int8 (it lost the fp32 weights the variants derive from): by default
    # bench reads the same weights in fp32, whose int8 variant is the bundled file
    base = Scorer(model or os.environ.get(ENV_VAR) or REFERENCE_MODEL, threads=threads)
    layout = base.info.layout
    results, wins = {}, {}
    search = None
    with tempfile.TemporaryDirectory() as tmp:
        paths = build_variants(base.path, Path(tmp))
        variants = tuple(paths)
        for variant in variants:
            scorer = base if variant == variants[0] else Scorer(paths[variant], threads=threads)
            times, wins[variant] = time_variant(scorer, boards, variant)
            results[variant] = summarise(times)
            if variant == f"{layout}_int8" and search_nodes > 0:
                search = {
                    **search_row(scorer, boards, search_nodes, threads),
                    "model_variant": variant,
                }
        if search is not None:
            search.update(fp32_search_rows(base, boards, search_nodes, threads))
        for variant, scorer in extra_rows(base, paths, threads):
            times, _ = time_variant(scorer, boards, variant)
            results[variant] = summarise(times)
            variants = (*variants, variant)
    deltas = [
        abs(fp32[move] - int8[move])
        for fp32, int8 in zip(wins[f"{layout}_fp32"], wins[f"{layout}_int8"], strict=True)
        for move in fp32
    ]
    speedups: dict[str, float] = {}
    if layout == "shared":
        per_move = results["per_move_fp32"]["median"]
        speedups = {
            "speedup_shared_int8_vs_per_move": round(
                per_move / results["shared_int8"]["median"], 2
            ),
            "speedup_shared_fp32_vs_per_move": round(
                per_move / results["shared_fp32"]["median"], 2
            ),
        }
    return {
        "model": str(base.path),
        "model_description": base.info.describe(),
        "threads": threads,
        "overlapped": base.overlapped,
        "positions": len(boards),
        "legal_moves_mean": float(np.mean([b.legal_moves.count() for b in boards])),
        "ms_per_position": {v: round(results[v]["median"], 3) for v in variants},
        "p90_ms_per_position": {v: round(results[v]["p90"], 3) for v in variants},
        "positions_per_s": {v: round(results[v]["positions_per_s"], 1) for v in variants},
        **speedups,
        "facts_path": native.path_name(),
        "inputs_ms_per_position": inputs_row(boards, base.info.features),
        "facts_ms_by_group": (
            facts_by_group(boards, base.info.features) if by_group and base.reads_facts else None
        ),
        "int8_abs_win_delta": {"max": float(np.max(deltas)), "mean": float(np.mean(deltas))},
        "search": search,
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"model     {result['model_description']}")
    print(
        f"facts     {result['facts_path']}" + ("" if native.available() else f" ({native.REASON})")
    )
    print(
        f"positions {result['positions']} (mean {result['legal_moves_mean']:.1f} legal moves), "
        f"threads {result['threads']}"
        + (
            ", shared rows in two halves (state half beside the facts)"
            if result["overlapped"]
            else ""
        )
    )
    print()
    print(f"{'variant':<18} {'median ms':>10} {'p90 ms':>9} {'pos/s':>8} {'vs per_move':>12}")
    per_move = result["ms_per_position"]["per_move_fp32"]
    for variant in result["ms_per_position"]:
        median = result["ms_per_position"][variant]
        print(
            f"{variant:<18} {median:>10.2f} {result['p90_ms_per_position'][variant]:>9.2f} "
            f"{result['positions_per_s'][variant]:>8.1f} {per_move / median:>11.1f}x"
        )
    inputs = result["inputs_ms_per_position"]
    print(f"\ninputs (tokens, move ids, facts) ms per position: python {inputs['python']:.3f}")
    if "native" in inputs:
        print(f"  native {inputs['native']:.3f}, {inputs['speedup']:.1f}x faster")
    if result.get("facts_ms_by_group"):
        print(f"\n{'fact group':<15} {'ms added':>9}")
        for group, ms in result["facts_ms_by_group"].items():
            print(f"{group:<15} {ms:>9.3f}")
    delta = result["int8_abs_win_delta"]
    print(
        f"\nint8 accuracy cost: |Δ expected win| max {delta['max']:.4f}, mean {delta['mean']:.5f}"
    )
    search = result.get("search")
    if search:
        print(
            f"\nsearch ({search['model_variant']}, {search['positions']} positions x "
            f"{search['nodes_per_position']} nodes)"
        )
        print(
            f"  {search['batch']} leaves per call {search['nps_batched']:>8.1f} nps "
            f"({search.get('parallel', 1)} calls at once, "
            f"{search.get('threads_per_call', 1)} thread each)"
        )
        print(f"  1 leaf per call  {search['nps_one_leaf']:>8.1f} nps")
        if search.get("nps_batched_python"):
            print(
                f"  python facts     {search['nps_batched_python']:>8.1f} nps "
                f"({SEARCH_BATCH} leaves per call)"
            )
        if search["speedup_batched"]:
            print(f"  batched speedup  {search['speedup_batched']:>8.2f}x")
        print(f"  fp32 weights     {search['nps_fp32']:>8.1f} nps")
        if search.get("nps_fp32_python"):
            ratio = search["nps_batched"] / search["nps_fp32_python"]
            print(
                f"  fp32, python facts {search['nps_fp32_python']:>6.1f} nps "
                f"(the engine before the core and int8: {ratio:.2f}x slower)"
            )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(
        parser, "fp32 ONNX model, shared or per_move layout (bundled: its fp32 weights)"
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--positions", type=int, default=None, help="use the first N positions")
    parser.add_argument(
        "--search-nodes",
        type=int,
        default=DEFAULT_SEARCH_NODES,
        metavar="N",
        help="search row: nodes searched from each of its positions (0: no search row; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--facts-by-group",
        action="store_true",
        help="also time what each fact group adds to the input facts (left out one at a time)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    if args.search_nodes < 0:
        raise CommandError("oneply bench: --search-nodes must be 0 or more", exit_code=2)
    try:
        result = bench(
            args.model, args.threads, args.positions, args.search_nodes, args.facts_by_group
        )
    except ModelFileError as error:
        raise CommandError(f"oneply bench: {error}", exit_code=2) from None
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0

"""`oneply bench`: inference speed of the two layouts and of int8, for the same weights.

On a fixed, committed set of positions (engine/data/bench_positions.txt: openings,
middlegames, endgames and the 218-move position) it times one session run per position for

* ``shared_fp32``  — the model file as shipped;
* ``shared_int8``  — the same weights dynamically quantized (engine/graph.py);
* ``per_move_fp32`` — the same weights rebuilt in the paper's layout, one 79-token sequence per
  legal move (the baseline every public port of the paper runs).

and reports ms per position (median, p90), positions per second, the speedup of shared int8
over per_move fp32, and the accuracy cost of int8 (|Δ expected win| over every move).

With two threads or more, a model that reads move facts runs its shared rows as two halves,
the state half beside the move facts (engine/halves.py); the ``shared_int8_whole`` row then
times the int8 file run as one graph, what that overlap saves.

The search row times the look-ahead (engine/search.py) on the int8 variant: nodes per second
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
from oneply.engine.features import GROUPS, encode_facts
from oneply.engine.graph import build_model, quantize_int8, weights_of
from oneply.engine.inference import Scorer
from oneply.engine.model_file import ModelFileError, add_model_argument
from oneply.engine.search import Limits, TreeSearch

POSITIONS_FILE = Path(__file__).parent / "data" / "bench_positions.txt"
VARIANTS = ("shared_fp32", "shared_int8", "per_move_fp32")
PER_MOVE_VARIANTS = ("per_move_fp32", "per_move_int8")
#: the int8 file with its graph run whole, beside the shared rows' two halves
WHOLE_VARIANT = "shared_int8_whole"
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


def time_facts(boards: list[chess.Board], facts: Sequence[str]) -> list[float]:
    """Milliseconds per position to compute the engine/features.py facts a model reads, alone
    (part of every scoring call of such a model)."""
    times = []
    for board in boards:
        start = time.perf_counter()
        moves = list(board.legal_moves)
        encode_facts([board], [moves], max(1, len(moves)), facts)
        times.append((time.perf_counter() - start) * 1000)
    return times


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


def search_nps(scorer: Scorer, boards: list[chess.Board], nodes: int, batch: int) -> float:
    """Nodes per second of a fresh search of `nodes` nodes from each board, `batch` leaves
    per forward pass."""
    total_nodes, total_seconds = 0, 0.0
    for board in tqdm(boards, desc=f"search x{batch:<5}", unit="pos", leave=False, file=sys.stderr):
        tree = TreeSearch(scorer, batch=batch)
        start = time.perf_counter()
        info = tree.search(board, Limits(nodes=nodes))
        total_seconds += time.perf_counter() - start
        total_nodes += info.nodes
    return total_nodes / total_seconds if total_seconds > 0 else 0.0


def search_row(scorer: Scorer, boards: list[chess.Board], nodes: int) -> dict[str, Any]:
    """The search row: nps with SEARCH_BATCH leaves per call and with one."""
    step = max(1, len(boards) // SEARCH_POSITIONS)
    spread = [b for b in boards[::step] if any(b.legal_moves)][:SEARCH_POSITIONS]
    batched = search_nps(scorer, spread, nodes, SEARCH_BATCH)
    single = search_nps(scorer, spread, nodes, 1)
    return {
        "model_variant": "",  # filled in by bench
        "positions": len(spread),
        "nodes_per_position": nodes,
        "batch": SEARCH_BATCH,
        "nps_batched": round(batched, 1),
        "nps_one_leaf": round(single, 1),
        "speedup_batched": round(batched / single, 2) if single > 0 else None,
    }


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
    base = Scorer(model, threads=threads)
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
                search = {**search_row(scorer, boards, search_nodes), "model_variant": variant}
        if base.overlapped:  # the int8 file once more, its graph run whole (engine/halves.py)
            whole = Scorer(paths["shared_int8"], threads=threads, overlap=False)
            times, _ = time_variant(whole, boards, WHOLE_VARIANT)
            results[WHOLE_VARIANT] = summarise(times)
            variants = (*variants, WHOLE_VARIANT)
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
        "facts_ms_per_position": (
            round(statistics.median(time_facts(boards, base.info.features)), 3)
            if base.reads_facts
            else None
        ),
        "facts_ms_by_group": (
            facts_by_group(boards, base.info.features) if by_group and base.reads_facts else None
        ),
        "int8_abs_win_delta": {"max": float(np.max(deltas)), "mean": float(np.mean(deltas))},
        "search": search,
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"model     {result['model_description']}")
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
    if result["facts_ms_per_position"] is not None:
        print(
            f"\nof which the input facts (python-chess): {result['facts_ms_per_position']:.2f} ms"
        )
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
        print(f"  {search['batch']} leaves per call {search['nps_batched']:>8.1f} nps")
        print(f"  1 leaf per call  {search['nps_one_leaf']:>8.1f} nps")
        if search["speedup_batched"]:
            print(f"  batched speedup  {search['speedup_batched']:>8.2f}x")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(parser, "fp32 ONNX model, shared or per_move layout")
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

"""`oneply train inspect DIR`: what a directory of shards holds, and samples anyone can check.

Prints the counts (positions, values, shards, bytes per position) and the mix of the
positions — game phase (training/data/positions.py's rule), material balance, legal-move count,
the share whose best move is a capture, and histograms of the values — as a table, and draws
the same as a PNG (``--png``, default DIR/inspect.png). The mix is computed on an evenly
spaced sample of at most ``--mix-limit`` positions, since it needs python-chess per position.

``--sample K --json`` prints K records as JSON lines instead, ``{"fen": …, "values":
{"e2e4": 0.53, …}}``, so anyone can check the labels with their own tools (the FEN is the
one scored, move counters included). Best-only shards (``generate --labels best``) hold one
scored move per position: their records list that move alone, their value histogram is of the
best values, and the table says ``labels: best``.

``--fens N --split val`` prints the FENs of the split's first N positions, one per line: fed to
``oneply train annotate --depth 8`` they become a *judge set*, the same held-out positions
labelled deeper, on which models trained on labels of different depths compare fairly (each
run's own validation loss is measured against its own labels).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import chess
import numpy as np

from oneply.engine.errors import CommandError
from oneply.engine.facts.tokenizer import fen_of_tokens
from oneply.training.data.compact import UNSCORED, board_of_tokens
from oneply.training.data.dataset import AnnotatedDataset, DatasetError, find_shards
from oneply.training.data.positions import PIECE_MATERIAL, game_phase

MATERIAL = {chess.PAWN: 1, **PIECE_MATERIAL}
VALUE_BINS = np.linspace(0.0, 1.0, 11)


def _spaced(count: int, limit: int) -> np.ndarray:
    return np.unique(np.linspace(0, count - 1, min(count, limit)).astype(np.int64))


def records(dataset: AnnotatedDataset, count: int) -> list[dict[str, Any]]:
    """``count`` evenly spaced positions as {"fen", "values": {uci: win}}."""
    out = []
    for index in _spaced(len(dataset), count):
        state, _, wins = dataset[int(index)]
        board = board_of_tokens(state)
        pairs = zip(board.legal_moves, wins, strict=True)
        values = {m.uci(): round(float(w), 5) for m, w in pairs if w != UNSCORED}
        out.append({"fen": board.fen(), "values": values})
    return out


def material_balance(board: chess.Board) -> int:
    """White's material minus Black's (P=1, N=B=3, R=5, Q=9)."""
    return sum(
        value * (len(board.pieces(piece, chess.WHITE)) - len(board.pieces(piece, chess.BLACK)))
        for piece, value in MATERIAL.items()
    )


def mix(dataset: AnnotatedDataset, limit: int) -> dict[str, Any]:
    """Histograms over an evenly spaced sample of the positions."""
    phase: Counter[str] = Counter()
    balance: Counter[int] = Counter()
    legal: Counter[str] = Counter()
    values = np.zeros(len(VALUE_BINS) - 1, dtype=np.int64)
    best = np.zeros(len(VALUE_BINS) - 1, dtype=np.int64)
    captures = 0
    chosen = _spaced(len(dataset), limit)
    for index in chosen:
        state, _, wins = dataset[int(index)]
        board = board_of_tokens(state)
        moves = list(board.legal_moves)
        phase[game_phase(board)] += 1
        balance[max(-9, min(9, material_balance(board)))] += 1
        legal[f"{len(moves) // 10 * 10}-{len(moves) // 10 * 10 + 9}"] += 1
        captures += board.is_capture(moves[int(np.argmax(wins))])
        values += np.histogram(wins[wins != UNSCORED], VALUE_BINS)[0]
        best += np.histogram([wins.max()], VALUE_BINS)[0]
    return {
        "sampled": len(chosen),
        "phase": dict(sorted(phase.items())),
        "material_balance": {str(k): v for k, v in sorted(balance.items())},
        "legal_moves": dict(sorted(legal.items(), key=lambda kv: int(kv[0].split("-")[0]))),
        "best_move_is_capture": round(captures / max(1, len(chosen)), 4),
        "values": values.tolist(),
        "best_values": best.tolist(),
        "value_bins": [round(float(b), 2) for b in VALUE_BINS],
    }


def summary(root: Path, dataset: AnnotatedDataset, limit: int) -> dict[str, Any]:
    shards = find_shards(root)
    size = sum(f.stat().st_size for s in shards for f in s.iterdir() if f.is_file())
    formats = Counter(json.loads((s / "meta.json").read_text())["format"] for s in shards)
    return {
        "positions": len(dataset),
        "labels": "+".join(sorted(dataset.labels)),
        "action_values": dataset.num_action_values,
        "shards": len(shards),
        "formats": dict(formats),
        "bytes": size,
        "bytes_per_position": round(size / max(1, len(dataset)), 1),
        "mix": mix(dataset, limit),
    }


def table(report: dict[str, Any]) -> str:
    m = report["mix"]
    lines = [
        f"positions           {report['positions']:>12,}",
        f"labels              {report['labels']:>12}",
        f"action values       {report['action_values']:>12,}",
        f"shards              {report['shards']:>12,}  {report['formats']}",
        f"bytes per position  {report['bytes_per_position']:>12}",
        f"mix (of {m['sampled']:,} positions)",
        f"  best move captures {m['best_move_is_capture']:.1%}",
    ]
    for title in ("phase", "material_balance", "legal_moves"):
        total = max(1, sum(m[title].values()))
        cells = "  ".join(f"{k}: {v / total:.1%}" for k, v in m[title].items())
        lines.append(f"  {title.replace('_', ' '):<17}{cells}")
    for title in ("values", "best_values"):
        total = max(1, sum(m[title]))
        cells = " ".join(f"{v / total:5.1%}" for v in m[title])
        lines.append(f"  {title.replace('_', ' '):<17}{cells}  (bins of 0.1 from 0 to 1)")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = report["mix"]
    figure, axes = plt.subplots(2, 3, figsize=(13, 7))
    bars = [
        ("game phase", list(m["phase"]), list(m["phase"].values())),
        ("material balance (White − Black)", list(m["material_balance"]), None),
        ("legal moves", list(m["legal_moves"]), list(m["legal_moves"].values())),
        ("all values", [f"{b:.1f}" for b in m["value_bins"][:-1]], m["values"]),
        ("best value per position", [f"{b:.1f}" for b in m["value_bins"][:-1]], m["best_values"]),
    ]
    bars[1] = (bars[1][0], bars[1][1], list(m["material_balance"].values()))
    for axis, (title, labels, counts) in zip(axes.flat, bars, strict=False):
        axis.bar(range(len(counts)), counts)
        axis.set_xticks(range(len(counts)), labels, rotation=45, fontsize=7)
        axis.set_title(title)
    axes.flat[-1].axis("off")
    axes.flat[-1].text(
        0.0,
        0.5,
        f"{report['positions']:,} positions\n{report['bytes_per_position']} bytes/position\n"
        f"best move captures: {m['best_move_is_capture']:.1%}",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="directory of shards (generate or annotate)")
    parser.add_argument("--sample", type=int, default=0, help="print K records instead")
    parser.add_argument("--json", action="store_true", help="JSON (lines with --sample)")
    parser.add_argument("--png", type=Path, default=None, help="plot (default DIR/inspect.png)")
    parser.add_argument("--mix-limit", type=int, default=20_000, help="positions for the mix")
    parser.add_argument(
        "--fens", type=int, default=0, metavar="N", help="print the first N FENs of --split"
    )
    parser.add_argument(
        "--split",
        choices=("all", "train", "val"),
        default="all",
        help="the positions to read (the trainer's split, fit --val-percent's default 5)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        dataset = AnnotatedDataset(args.dir, split=args.split)
    except DatasetError as error:
        raise CommandError(f"oneply train inspect: error: {error}", exit_code=2) from None
    if args.fens:
        for index in range(min(args.fens, len(dataset))):
            print(fen_of_tokens(dataset[index][0]))
        return 0
    if args.sample:
        for record in records(dataset, args.sample):
            print(json.dumps(record) if args.json else f"{record['fen']}  {record['values']}")
        return 0
    report = summary(args.dir, dataset, args.mix_limit)
    png = args.png or args.dir / "inspect.png"
    plot(report, png)
    print(json.dumps(report) if args.json else table(report) + f"\nplot: {png}")
    return 0

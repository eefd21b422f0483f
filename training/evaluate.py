"""`oneply eval MODEL`: how good is a model file? Runs through onnxruntime only (no torch).

On annotated positions (``--data``, the ``val`` split by default, or ``all``), per position
over its legal moves, with Stockfish's win probabilities as the truth:

* **action accuracy**: the model's best move (highest expected win, plain argmax) is among
  Stockfish's best, i.e. its Stockfish win is within BEST_TOLERANCE (1e-4, under one
  centipawn) of the best move's. Ties are common (several mates, equal evaluations), so
  "the same move as Stockfish's first line" would understate accuracy.
* **Kendall τ**: τ-b between the model's expected wins and Stockfish's wins over the position's
  legal moves, averaged over positions where it is defined (at least two moves and neither
  side all ties). τ-b counts each pair of moves as concordant or discordant and corrects for
  ties in either ranking: τ_b = (C − D) / sqrt((n₀ − n₁)(n₀ − n₂)), n₀ = n(n−1)/2, n₁ / n₂ the
  pairs tied in the model's / Stockfish's values.
* **log loss**: mean cross-entropy (nats per action value) of the HL-Gauss target (the
  training target, σ = ``HL_GAUSS_SIGMA`` bin widths) under the model's bin distribution;
  ``log_loss_one_hot`` is the negative log-probability of the bin that holds Stockfish's value.

On Lichess puzzles (``--puzzles``, Lichess puzzle format): the FEN is before the opponent's move,
the first move of ``Moves`` is the opponent's; then the engine must find every one of its
moves in the line, the opponent's replies coming from the line. A move that checkmates is
always correct (and ends the puzzle). Accuracy is reported overall and per rating band.

The default puzzle file is the dev set shipped in ``arena/data/puzzles-dev.csv`` (the
``DEV_PUZZLES`` constant), used for evaluation only (training excludes its positions).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess
import numpy as np
from tqdm import tqdm

from oneply.arena import DEV_PUZZLES
from oneply.engine.features import encode_facts
from oneply.engine.inference import PAD_MOVE, MoveScore, MoveScorer, Scorer
from oneply.engine.values import BEST_TOLERANCE, expected_win, hl_gauss, value_to_bin
from oneply.training.compact import board_of_tokens

BANDS = ((0, 1000), (1000, 1500), (1500, 2000), (2000, 2500), (2500, 10_000))


# --------------------------------------------------------------------------- metrics


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b of two rankings of the same items; NaN when undefined (fewer than two
    items, or one side entirely tied)."""
    n = len(x)
    if n < 2:
        return math.nan
    upper = np.triu_indices(n, k=1)
    sx = np.sign(np.subtract.outer(x, x))[upper]
    sy = np.sign(np.subtract.outer(y, y))[upper]
    pairs = len(sx)
    denominator = math.sqrt(float(pairs - np.sum(sx == 0)) * float(pairs - np.sum(sy == 0)))
    if denominator == 0:
        return math.nan
    return float(np.sum(sx * sy) / denominator)


@dataclass
class PositionScores:
    """Running sums over evaluated positions."""

    positions: int = 0
    hits: int = 0
    tau_sum: float = 0.0
    tau_count: int = 0
    values: int = 0
    log_loss: float = 0.0
    log_loss_one_hot: float = 0.0

    def add(self, log_probs: np.ndarray, wins: np.ndarray) -> None:
        """One position: log_probs [n, K] for its n legal moves, wins [n] from Stockfish."""
        predicted = expected_win(log_probs)
        self.positions += 1
        self.hits += bool(wins[np.argmax(predicted)] >= wins.max() - BEST_TOLERANCE)
        tau = kendall_tau_b(predicted, wins)
        if not math.isnan(tau):
            self.tau_sum += tau
            self.tau_count += 1
        num_bins = log_probs.shape[-1]
        self.values += len(wins)
        self.log_loss -= float(np.sum(hl_gauss(wins, num_bins) * log_probs))
        bins = value_to_bin(wins, num_bins)
        self.log_loss_one_hot -= float(np.sum(log_probs[np.arange(len(wins)), bins]))

    def result(self) -> dict:
        return {
            "positions": self.positions,
            "action_values": self.values,
            "action_accuracy": self.hits / max(1, self.positions),
            "kendall_tau": self.tau_sum / self.tau_count if self.tau_count else None,
            "log_loss": self.log_loss / max(1, self.values),
            "log_loss_one_hot": self.log_loss_one_hot / max(1, self.values),
        }


def batches(
    dataset, limit: int | None, size: int
) -> Iterator[tuple[np.ndarray, np.ndarray, list[np.ndarray]]]:
    """(states [B, 77], padded move ids [B, N], per-position wins) of the dataset, in order."""
    count = len(dataset) if limit is None else min(limit, len(dataset))
    for start in range(0, count, size):
        examples = [dataset[i] for i in range(start, min(count, start + size))]
        width = max(len(moves) for _, moves, _ in examples)
        ids = np.full((len(examples), width), PAD_MOVE, dtype=np.int64)
        for row, (_, moves, _) in enumerate(examples):
            ids[row, : len(moves)] = moves
        states = np.stack([state for state, _, _ in examples]).astype(np.int64)
        yield states, ids, [wins for _, _, wins in examples]


def row_facts(states: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The engine/features.py facts of stored rows (their moves in python-chess order, the
    order the values are stored in)."""
    boards = [board_of_tokens(state) for state in states]
    return encode_facts(boards, [list(board.legal_moves) for board in boards], width)


def evaluate_dataset(scorer: Scorer, dataset, limit: int | None = None, batch: int = 64) -> dict:
    """Action accuracy, Kendall τ-b and log loss of a model over annotated positions."""
    scores = PositionScores()
    total = len(dataset) if limit is None else min(limit, len(dataset))
    with tqdm(total=total, unit="pos", desc="positions", leave=False) as bar:
        for states, ids, wins in batches(dataset, limit, batch):
            facts = row_facts(states, ids.shape[1]) if scorer.reads_facts else ()
            log_probs = scorer.log_probs(states, ids, *facts)
            for row, position_wins in enumerate(wins):
                scores.add(log_probs[row, : len(position_wins)].astype(np.float64), position_wins)
            bar.update(len(wins))
    return scores.result()


# --------------------------------------------------------------------------- puzzles


@dataclass
class Puzzle:
    id: str
    fen: str
    moves: list[str]
    rating: int
    themes: list[str] = field(default_factory=list)


def read_puzzles(path: Path, limit: int | None = None) -> list[Puzzle]:
    """Lichess puzzle CSV rows (PuzzleId, FEN, Moves, Rating, ...).

    With a limit, an evenly spaced subset of the file: puzzle files are often sorted by
    rating, and the first N would all be easy ones.
    """
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    if limit is not None and limit < len(rows):
        rows = [rows[i] for i in np.linspace(0, len(rows) - 1, limit).round().astype(int)]
    return [
        Puzzle(
            r["PuzzleId"],
            r["FEN"],
            r["Moves"].split(),
            int(r["Rating"]),
            r.get("Themes", "").split(),
        )
        for r in rows
    ]


class PuzzleRun:
    """One puzzle being solved: the board, where we are in the line, and the verdict."""

    def __init__(self, puzzle: Puzzle):
        self.puzzle = puzzle
        self.board = chess.Board(puzzle.fen)
        self.board.push_uci(puzzle.moves[0])  # the opponent's move sets the puzzle
        self.index = 1  # the next move in the line, always one of ours
        self.solved: bool | None = None

    def play(self, move: chess.Move) -> None:
        """Our move: right if it is the line's move or checkmates; then the opponent replies."""
        expected = chess.Move.from_uci(self.puzzle.moves[self.index])
        self.board.push(move)
        if self.board.is_checkmate():
            self.solved = True
        elif move != expected:
            self.solved = False
        elif self.index + 1 >= len(self.puzzle.moves):
            self.solved = True
        else:
            self.board.push_uci(self.puzzle.moves[self.index + 1])
            self.index += 2


#: how the engine picks its move from the scored legal moves (best first) of a board
Chooser = Callable[[chess.Board, list[MoveScore]], chess.Move]


def argmax_choice(board: chess.Board, scores: list[MoveScore]) -> chess.Move:
    return scores[0].move


def solve_puzzles(
    scorer: MoveScorer,
    puzzles: list[Puzzle],
    batch: int = 64,
    progress: bool = True,
    choose: Chooser = argmax_choice,
) -> list[bool]:
    """Whether the engine solves each puzzle, picking moves with ``choose`` (plain argmax by
    default; the strength suite passes the full move policy); all open puzzles of a chunk are
    scored in one call per move. Any MoveScorer will do (training checks its torch model)."""
    results: list[bool] = []
    chunks = range(0, len(puzzles), batch)
    for start in tqdm(chunks, desc="puzzles", unit="batch", leave=False, disable=not progress):
        runs = [PuzzleRun(p) for p in puzzles[start : start + batch]]
        while open_runs := [r for r in runs if r.solved is None]:
            for run_, scores in zip(
                open_runs, scorer.score_many([r.board for r in open_runs]), strict=True
            ):
                run_.play(choose(run_.board, scores))
        results.extend(bool(r.solved) for r in runs)
    return results


def band_name(low: int, high: int) -> str:
    if low == 0:
        return f"<{high}"
    return f"≥{low}" if high >= 10_000 else f"{low}-{high - 1}"


def puzzle_report(puzzles: list[Puzzle], solved: list[bool]) -> dict:
    """Overall and per-rating-band accuracy."""
    bands = {}
    for low, high in BANDS:
        chosen = [s for p, s in zip(puzzles, solved, strict=True) if low <= p.rating < high]
        if chosen:
            bands[band_name(low, high)] = {
                "count": len(chosen),
                "accuracy": sum(chosen) / len(chosen),
            }
    return {"count": len(puzzles), "accuracy": sum(solved) / max(1, len(solved)), "bands": bands}


def evaluate_puzzles(scorer: MoveScorer, path: Path, limit: int | None = None) -> dict:
    puzzles = read_puzzles(path, limit)
    return {"file": str(path), **puzzle_report(puzzles, solve_puzzles(scorer, puzzles))}


# --------------------------------------------------------------------------- report


def evaluate_model(
    model: str | Path,
    data: list[str | Path] | None = None,
    split: str = "val",
    puzzles: str | Path | None = DEV_PUZZLES,
    limit: int | None = None,
    puzzle_limit: int | None = None,
    val_percent: float = 5.0,
    threads: int | None = None,
) -> dict:
    """All metrics of one model file as a dict (what the pipeline embeds in the ONNX metadata)."""
    scorer = Scorer(model, threads=threads)
    report: dict = {"model": str(model), "model_info": scorer.info.describe()}
    if data:
        from oneply.training.dataset import AnnotatedDataset

        dataset = AnnotatedDataset(list(data), split=split, val_percent=val_percent)
        report["data"] = {"roots": [str(d) for d in data], "split": split}
        report["positions"] = evaluate_dataset(scorer, dataset, limit) if len(dataset) else {}
    if puzzles and Path(puzzles).exists():
        report["puzzles"] = evaluate_puzzles(scorer, Path(puzzles), puzzle_limit)
    return report


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_report(report: dict) -> str:
    """Terminal tables of a report."""
    lines = [f"model: {report['model_info']}"]
    if report.get("data") and not report.get("positions"):
        lines += ["", f"no annotated positions in the {report['data']['split']} split"]
    if report.get("positions"):
        p = report["positions"]
        lines += [
            "",
            f"annotated positions ({report['data']['split']} split)",
            f"  {'positions':<18}{p['positions']:>10}",
            f"  {'action values':<18}{p['action_values']:>10}",
            f"  {'action accuracy':<18}{p['action_accuracy']:>10.1%}",
            f"  {'Kendall tau-b':<18}{_number(p['kendall_tau']):>10}",
            f"  {'log loss (HL)':<18}{p['log_loss']:>10.4f}",
            f"  {'log loss (bin)':<18}{p['log_loss_one_hot']:>10.4f}",
        ]
    if "puzzles" in report:
        q = report["puzzles"]
        lines += ["", f"puzzles ({q['file']})", f"  {'rating':<12}{'count':>7}{'solved':>9}"]
        for band, row in q["bands"].items():
            lines.append(f"  {band:<12}{row['count']:>7}{row['accuracy']:>9.1%}")
        lines.append(f"  {'all':<12}{q['count']:>7}{q['accuracy']:>9.1%}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX model file")
    parser.add_argument("--data", nargs="*", default=[], help="annotated shard directories")
    parser.add_argument("--split", choices=("val", "all", "train"), default="val")
    parser.add_argument("--val-percent", type=float, default=5.0)
    parser.add_argument("--limit", type=int, default=None, help="at most N annotated positions")
    parser.add_argument(
        "--puzzles", default=str(DEV_PUZZLES), help="Lichess puzzle CSV (default: dev set)"
    )
    parser.add_argument("--no-puzzles", action="store_true")
    parser.add_argument(
        "--puzzle-limit", type=int, default=None, help="N puzzles, evenly spaced through the file"
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", help="also write the report as JSON to this file")


def run(args: argparse.Namespace) -> int:
    puzzles = None if args.no_puzzles else args.puzzles
    if puzzles and not Path(puzzles).exists():
        print(f"puzzle file {puzzles} not found; skipping puzzles")
    report = evaluate_model(
        args.model,
        data=args.data,
        split=args.split,
        puzzles=puzzles,
        limit=args.limit,
        puzzle_limit=args.puzzle_limit,
        val_percent=args.val_percent,
        threads=args.threads,
    )
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nreport: {args.json}")
    return 0

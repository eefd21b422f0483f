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

On Lichess puzzles (``--puzzles``, Lichess puzzle format), by the rules of the one puzzle
checker, arena/puzzles.py: accuracy overall and per rating band. The default puzzle file is
the dev set shipped in ``arena/data/puzzles-dev.csv`` (``DEV_PUZZLES``), used for evaluation
only (training excludes its positions).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from oneply.arena.puzzles import DEV_PUZZLES, evaluate_puzzles
from oneply.engine.errors import CommandError
from oneply.engine.facts.encoding import PAD_MOVE, token_facts
from oneply.engine.model.values import BEST_TOLERANCE, expected_win, hl_gauss, value_to_bin
from oneply.engine.play.inference import Scorer
from oneply.training.data.compact import board_of_tokens

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
        self.add_ranking(expected_win(log_probs), wins)
        num_bins = log_probs.shape[-1]
        self.values += len(wins)
        self.log_loss -= float(np.sum(hl_gauss(wins, num_bins) * log_probs))
        bins = value_to_bin(wins, num_bins)
        self.log_loss_one_hot -= float(np.sum(log_probs[np.arange(len(wins)), bins]))

    def add_ranking(self, predicted: np.ndarray, wins: np.ndarray) -> None:
        """One position's move ranking against Stockfish's: accuracy and τ (all an sv or bc
        model gives, whose scores are one minus each child's expected win or the policy)."""
        self.positions += 1
        self.hits += bool(wins[np.argmax(predicted)] >= wins.max() - BEST_TOLERANCE)
        tau = kendall_tau_b(predicted, wins)
        if not math.isnan(tau):
            self.tau_sum += tau
            self.tau_count += 1

    def result(self) -> dict[str, Any]:
        if not self.values:  # sv or bc: no action-value log loss to report
            return {
                "positions": self.positions,
                "action_accuracy": self.hits / max(1, self.positions),
                "kendall_tau": self.tau_sum / self.tau_count if self.tau_count else None,
            }
        return {
            "positions": self.positions,
            "action_values": self.values,
            "action_accuracy": self.hits / max(1, self.positions),
            "kendall_tau": self.tau_sum / self.tau_count if self.tau_count else None,
            "log_loss": self.log_loss / max(1, self.values),
            "log_loss_one_hot": self.log_loss_one_hot / max(1, self.values),
        }


class Examples(Protocol):
    """Annotated positions by index (training/data/dataset.py's datasets, or a slice of them)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


def batches(
    dataset: Examples, limit: int | None, size: int
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


def row_facts(
    states: np.ndarray, width: int, facts: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The engine/facts/features.py facts of stored rows (their moves in python-chess order, the
    order the values are stored in), those a model of these `facts` reads."""
    return token_facts(states, width, facts)


def evaluate_dataset(
    scorer: Scorer, dataset: Examples, limit: int | None = None, batch: int = 64
) -> dict[str, Any]:
    """Action accuracy, Kendall τ-b and log loss of a model over annotated positions (an sv
    or bc model: accuracy and τ of its move ranking, no per-action log loss)."""
    scores = PositionScores()
    total = len(dataset) if limit is None else min(limit, len(dataset))
    with tqdm(total=total, unit="pos", desc="positions", leave=False) as bar:
        for states, ids, wins in batches(dataset, limit, batch):
            if scorer.predictor != "av":  # rank the moves as the engine plays them
                boards = [board_of_tokens(state) for state in states]
                for board, ranked, position_wins in zip(
                    boards, scorer.score_many(boards), wins, strict=True
                ):
                    by_move = {score.move: score.win for score in ranked}
                    predicted = np.array([by_move[move] for move in board.legal_moves])
                    scores.add_ranking(predicted, position_wins)
                bar.update(len(wins))
                continue
            facts = (
                row_facts(states, ids.shape[1], scorer.info.features) if scorer.reads_facts else ()
            )
            log_probs = scorer.log_probs(states, ids, *facts)
            for row, position_wins in enumerate(wins):
                scores.add(log_probs[row, : len(position_wins)].astype(np.float64), position_wins)
            bar.update(len(wins))
    return scores.result()


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
) -> dict[str, Any]:
    """All metrics of one model file as a dict (what the pipeline embeds in the ONNX metadata)."""
    scorer = Scorer(model, threads=threads)
    report: dict[str, Any] = {"model": str(model), "model_info": scorer.info.describe()}
    if data:
        from oneply.training.data.dataset import AnnotatedDataset

        dataset = AnnotatedDataset(list(data), split=split, val_percent=val_percent)
        if "best" in dataset.labels:  # Kendall τ, log loss and accuracy need every move's value
            raise CommandError(
                "--data holds best-only shards (generate --labels best); "
                "evaluating on positions needs all-moves data"
            )
        report["data"] = {"roots": [str(d) for d in data], "split": split}
        report["positions"] = evaluate_dataset(scorer, dataset, limit) if len(dataset) else {}
    if puzzles and Path(puzzles).exists():
        report["puzzles"] = evaluate_puzzles(scorer, Path(puzzles), puzzle_limit)
    return report


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_report(report: dict[str, Any]) -> str:
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
            f"  {'action accuracy':<18}{p['action_accuracy']:>10.1%}",
            f"  {'Kendall tau-b':<18}{_number(p['kendall_tau']):>10}",
        ]
        if "log_loss" in p:  # an action-value model: its distributions are scored too
            lines += [
                f"  {'action values':<18}{p['action_values']:>10}",
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

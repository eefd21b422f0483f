"""What training measures as it goes: validation loss / action accuracy on the `val` split, the
dev-puzzle check, the metrics log and its plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import numpy as np
import torch

from oneply.arena.puzzles import Puzzle, solve_puzzles
from oneply.engine.facts.encoding import EncodedBatch
from oneply.engine.files import atomic_path
from oneply.engine.play.inference import MoveScore, score_positions
from oneply.training.fit.batches import collate
from oneply.training.fit.config import TrainConfig
from oneply.training.fit.data_feed import Positions
from oneply.training.fit.device import autocast
from oneply.training.fit.targets import forward, hits, label_count, loss_sum, predictor_of


@torch.no_grad()
def validate(
    model: torch.nn.Module,
    dataset: Positions,
    config: TrainConfig,
    device: torch.device,
    bf16: bool,
) -> dict[str, float]:
    """Loss and action accuracy over (up to val_positions of) the validation split."""
    count = min(len(dataset), config.val_positions)
    total_loss = total_labels = solved = 0.0
    for start in range(0, count, config.batch):
        rows = [dataset[i] for i in range(start, min(count, start + config.batch))]
        batch = collate(rows, facts=model_facts(model))
        for part in batch.split(config.micro_batch or config.batch):
            part = part.to(device)
            with autocast(device, bf16):
                log_probs = forward(model, part, config.layout)
            total_loss += float(loss_sum(log_probs, part, config))
            total_labels += label_count(part, config.predictor)
            solved += float(hits(log_probs, part, config.predictor).sum())
    return {"loss": total_loss / max(1, total_labels), "accuracy": solved / max(1, count)}


def model_facts(model: Any) -> tuple[str, ...]:
    """The engine/facts/features.py facts an ActionValueModel reads (its config's names)."""
    return tuple(model.config.features)


class TorchScorer:
    """A MoveScorer over a torch model, so training checks puzzles with the one puzzle solver
    (arena/puzzles.py's solve_puzzles) without exporting a model file."""

    def __init__(self, model: torch.nn.Module, device: torch.device, layout: str, bf16: bool):
        self.model, self.device, self.layout, self.bf16 = model, device, layout, bf16

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.score_many([board])[0]

    @torch.no_grad()
    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        """The Scorer's rule for the model's predictor (engine/play/inference.score_positions)."""
        predictor = predictor_of(self.model)
        return score_positions(boards, predictor, model_facts(self.model), self._run)

    def _run(self, encoded: EncodedBatch) -> np.ndarray:
        inputs = [torch.from_numpy(a).to(self.device) for a in encoded.arrays()]
        with autocast(self.device, self.bf16):
            log_probs = self.model(*inputs[:2], self.layout, *inputs[2:])
        out: np.ndarray = log_probs.float().cpu().numpy()
        return out


def puzzle_check(
    model: torch.nn.Module, puzzles: list[Puzzle], device: torch.device, layout: str, bf16: bool
) -> dict[str, float]:
    """Share of `puzzles` solved with plain argmax (the `oneply eval` rule)."""
    solved = solve_puzzles(TorchScorer(model, device, layout, bf16), puzzles, progress=False)
    return {"accuracy": float(np.mean(solved)) if solved else 0.0, "count": len(solved)}


def plot_metrics(metrics_path: Path, png_path: Path) -> None:
    """Train/val loss and accuracy (and the puzzle check, when run) against steps, as a PNG
    (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    puzzles = [r for r in rows if r["split"] == "puzzles"]
    fig, axes = plt.subplots(1, 3 if puzzles else 2, figsize=(16.5 if puzzles else 11, 4))
    ax_loss, ax_acc = axes[:2]
    for split, style in (("train", "-"), ("val", "o-")):
        data = [r for r in rows if r["split"] == split]
        if data:
            steps = [r["step"] for r in data]
            ax_loss.plot(steps, [r["loss"] for r in data], style, label=split, markersize=3)
            ax_acc.plot(steps, [r["accuracy"] for r in data], style, label=split, markersize=3)
    ax_loss.set(xlabel="step", ylabel="cross-entropy (nats)", title="loss")
    ax_acc.set(xlabel="step", ylabel="action accuracy", title="best move among Stockfish's best")
    if puzzles:
        label = f"{puzzles[-1]['count']} dev puzzles"
        steps = [r["step"] for r in puzzles]
        axes[2].plot(steps, [r["accuracy"] for r in puzzles], "o-", label=label, markersize=3)
        axes[2].set(xlabel="step", ylabel="solved", title="puzzles, plain argmax (EMA model)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    with atomic_path(png_path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def append_metrics(path: Path, row: dict[str, Any]) -> None:
    with open(path, "a") as file:
        file.write(json.dumps(row) + "\n")

"""Builders shared by the training tests: synthetic shards, a tiny training config, the `train
fit` command line and a fast `train generate` run. Importing it needs no torch."""

from __future__ import annotations

import sys
import threading
from argparse import ArgumentParser, Namespace
from pathlib import Path
from typing import Any

import chess
import numpy as np

from oneply.engine.facts.moves import legal_move_ids
from oneply.engine.facts.tokenizer import tokenize
from oneply.training.data import generate
from oneply.training.data.shard_publish import write_shard
from oneply.training.fit.config import TrainConfig


def learnable_wins(ids: np.ndarray) -> np.ndarray:
    """A value that depends on the move only, so a few steps of training can fit it."""
    return ((ids % 7) / 6.0).astype(np.float32)


def make_shard(
    root: Path, positions: int, seed: int = 0, extra: list[str] = (), name: str = "chunk-000000"
) -> Path:
    """Positions from random games (plus `extra` FENs), with learnable synthetic values."""
    rng = np.random.default_rng(seed)
    boards = [chess.Board(fen) for fen in extra]
    board = chess.Board()
    while len(boards) < positions:
        if board.is_game_over() or board.ply() > 60:
            board = chess.Board()
        boards.append(board.copy())
        moves = list(board.legal_moves)
        board.push(moves[rng.integers(len(moves))])
    ids = [legal_move_ids(b) for b in boards]
    states = np.stack([tokenize(b) for b in boards])
    write_shard(root / name, states, ids, [learnable_wins(i) for i in ids])
    return root


def config(data: Path, out: Path, **changes: Any) -> TrainConfig:
    """A tiny, fast training config on ``data`` writing to ``out``, with ``changes``."""
    base = dict(preset="tiny", steps=12, batch=16, warmup=2, lr=3e-3, val_percent=20)
    base.update(eval_every=6, checkpoint_every=6, log_every=3, val_positions=64, bucket=4)
    return TrainConfig(data=[str(data)], out=str(out), **{**base, **changes})


def fit_command(data: Path, out: Path) -> list[str]:
    """A short `oneply train fit` of a tiny model, as a command line."""
    return [
        sys.executable, "-m", "oneply.engine", "train", "fit", str(data), "--out", str(out),
        "--preset", "tiny", "--steps", "16", "--threads", "1", "--batch", "8", "--warmup", "3",
        "--lr", "3e-3",
        "--checkpoint-every", "3", "--eval-every", "8", "--log-every", "2", "--val-percent",
        "20", "--bucket", "4", "--quiet", "--exclude-puzzles",
    ]  # fmt: skip


#: short games, so that a few hundred positions span many games and shards
FAST = ["--depth", "1", "--max-plies", "40", "--shard-size", "30", "--bench-sample", "0"]


def generate_args(*argv: str) -> Namespace:
    """`oneply train generate`'s arguments, parsed by its own parser."""
    parser = ArgumentParser()
    generate.add_arguments(parser)
    return parser.parse_args(list(argv))


def run_generate(out: Path, count: int, *extra: str) -> dict[str, Any]:
    """A fast `train generate` run of ``count`` positions into ``out``; its summary."""
    args = generate_args("--out", str(out), "--count", str(count), *FAST, *extra)
    return generate.run_generate(generate.generate_job(args))


def train_in_background(cfg: TrainConfig) -> tuple[threading.Thread, list[BaseException]]:
    """`fit.train(cfg)` in a started thread, for a run that waits on data the test writes; the
    list collects what it raised, for the test to assert empty after joining."""
    from oneply.training.fit import fit  # torch, imported only by the tests that train

    errors: list[BaseException] = []

    def train() -> None:
        try:
            fit.train(cfg, quiet=True)
        except BaseException as error:  # noqa: BLE001 - re-raised in the test thread
            errors.append(error)

    trainer = threading.Thread(target=train, daemon=True)
    trainer.start()
    return trainer, errors


def ablate(data: Path, out: Path, *argv: str) -> list[str]:
    """`oneply train ablate DATA --out OUT ARGV` of tiny rows, quietly on one thread, as run by
    its own parser; returns the full command line (to run again, or change)."""
    command = [str(data), "--out", str(out), *argv, "--preset", "tiny"]
    command += ["--val-positions", "16", "--threads", "1", "--quiet"]
    run_ablation(command)
    return command


def run_ablation(command: list[str]) -> None:
    """`oneply train ablate` on ``command``, parsed by its own parser; it must succeed."""
    from oneply.training.lab import ablation

    parser = ArgumentParser()
    ablation.add_arguments(parser)
    assert ablation.run(parser.parse_args(command)) == 0

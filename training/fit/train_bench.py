"""`oneply train fit --benchmark`: training throughput on synthetic batches."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oneply.engine.facts.features import MOVE_FACTS, SQUARE_FACTS, Fact
from oneply.training.fit.batches import Batch, collate
from oneply.training.fit.config import TrainConfig
from oneply.training.fit.device import autocast, bf16_supported
from oneply.training.fit.optim import make_optimizer
from oneply.training.fit.targets import forward, loss_sum
from oneply.training.model.model import LAYOUTS, PRESETS, ActionValueModel


def synthetic_batch(positions: int, rng: np.random.Generator) -> Batch:
    """Random positions with a realistic spread of legal-move counts (mean ≈ 35), and random
    facts (engine/facts/features.py) in their ranges for models that read them."""
    from oneply.engine.facts.moves import NUM_MOVES
    from oneply.engine.facts.tokenizer import VOCAB_SIZE

    counts = np.clip(rng.normal(35, 10, positions).round().astype(int), 1, 80)
    examples = [
        (
            rng.integers(0, VOCAB_SIZE, 77),
            rng.choice(NUM_MOVES, n, replace=False),
            rng.random(n, dtype=np.float32),
        )
        for n in counts
    ]
    batch = collate(examples)
    batch.square_facts = _random_facts(rng, (positions, 64), SQUARE_FACTS)
    batch.move_facts = _random_facts(rng, tuple(batch.moves.shape), MOVE_FACTS)
    return batch


def _random_facts(
    rng: np.random.Generator, shape: tuple[int, ...], declared: Sequence[Fact]
) -> torch.Tensor:
    sizes = np.array([fact.size for fact in declared])
    return torch.from_numpy((rng.random((*shape, len(sizes))) * sizes).astype(np.int64))


#: positions per per_move forward/backward pass when --micro-batch is 0 (not given): 79 tokens
#: per move make its activations ~N times larger than shared's, one pass over the batch
PER_MOVE_MICRO = 4


def benchmark(
    presets: list[str], batch: int, steps: int, per_move_micro: int = PER_MOVE_MICRO
) -> list[dict[str, Any]]:
    """Training throughput (action values/s) for each preset × layout × precision.

    Synthetic batches of `batch` positions (≈ 35 legal moves each); forward, backward and AdamW
    are timed after two warm-up steps. Both layouts train the same positions, so the numbers
    compare directly; per_move runs in micro-batches of `per_move_micro` positions (79 tokens
    per move make its activations ~N times larger; 0 means the default), shared in one pass.
    """
    per_move_micro = per_move_micro or PER_MOVE_MICRO
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device {device.type}, {torch.get_num_threads()} threads, batch {batch} positions")
    rows = []
    for preset in presets:
        for layout in LAYOUTS:
            for bf16 in (True, False):
                if bf16 and not bf16_supported(device):
                    continue
                config = TrainConfig(data=[], out="", preset=preset, layout=layout, batch=batch)
                config.micro_batch = per_move_micro if layout == "per_move" else 0
                rows.append(benchmark_one(config, device, bf16, steps))
                print(format_row(rows[-1]), flush=True)
    return rows


def benchmark_one(
    config: TrainConfig, device: torch.device, bf16: bool, steps: int
) -> dict[str, Any]:
    torch.manual_seed(0)
    model = ActionValueModel(PRESETS[config.preset]).to(device).train()
    optimizer = make_optimizer(model, config, fused=device.type == "cuda")
    rng = np.random.default_rng(0)
    batches = [synthetic_batch(config.batch, rng).to(device) for _ in range(2)]
    micro = config.micro_batch or config.batch
    values = 0
    for index in range(steps + 2):
        if index == 2:  # after warm-up
            if device.type == "cuda":
                torch.cuda.synchronize()
            start, values = time.perf_counter(), 0
        batch = batches[index % 2]
        for part in batch.split(micro):
            with autocast(device, bf16):
                log_probs = forward(model, part, config.layout)
            (loss_sum(log_probs, part, config) / batch.action_values).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        values += batch.action_values
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {
        "preset": config.preset,
        "layout": config.layout,
        "precision": "bf16" if bf16 else "fp32",
        "batch": config.batch,
        "micro_batch": micro,
        "action_values_per_s": values / seconds,
        "steps_per_s": steps / seconds,
    }


def format_row(row: dict[str, Any]) -> str:
    return (
        f"{row['preset']:>6}  {row['layout']:>8}  {row['precision']:>4}  "
        f"batch {row['batch']:>4}  micro {row['micro_batch']:>4}  "
        f"{row['action_values_per_s']:>10,.0f} action values/s  "
        f"{row['steps_per_s']:6.2f} steps/s"
    )

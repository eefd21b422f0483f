"""From annotated shards to batches: padding (Batch, collate), the resumable data order
(BatchOrder), and the training indices with puzzle positions excluded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from oneply.engine.errors import CommandError
from oneply.engine.facts.encoding import token_facts
from oneply.engine.facts.features import Wanted
from oneply.engine.facts.tokenizer import position_key
from oneply.training.data.dataset import AnnotatedDataset


@dataclass
class Batch:
    """Positions padded to the widest one: move id -1 and mask False mark padding."""

    states: torch.Tensor  # int64 [B, 77]
    moves: torch.Tensor  # int64 [B, N]
    wins: torch.Tensor  # float32 [B, N]
    mask: torch.Tensor  # bool [B, N]
    #: engine/facts/features.py facts, only for a model that reads them: int64 [B, 64, S], [B, N, M]
    square_facts: torch.Tensor | None = None
    move_facts: torch.Tensor | None = None

    @property
    def action_values(self) -> int:
        return int(self.mask.sum())

    def to(self, device: torch.device) -> Batch:
        """On `device`; to a GPU through pinned memory, so the copy is truly asynchronous."""
        if device.type != "cuda":
            return self._moved(lambda x: x.to(device))
        return self._moved(lambda x: x.pin_memory().to(device, non_blocking=True))

    def _moved(self, move: Callable[[torch.Tensor], torch.Tensor]) -> Batch:
        """Every tensor through `move` (the absent facts stay absent)."""
        moved = (move(self.states), move(self.moves), move(self.wins), move(self.mask))
        return Batch(*moved, _map(self.square_facts, move), _map(self.move_facts, move))

    def split(self, size: int) -> list[Batch]:
        count = -(-len(self.states) // size)
        columns = [[None] * count if t is None else t.split(size) for t in asdict_shallow(self)]
        return [Batch(*part) for part in zip(*columns, strict=True)]


def _map(
    tensor: torch.Tensor | None, move: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor | None:
    return None if tensor is None else move(tensor)


def asdict_shallow(batch: Batch) -> tuple[torch.Tensor | None, ...]:
    return batch.states, batch.moves, batch.wins, batch.mask, batch.square_facts, batch.move_facts


def collate(
    examples: list[tuple[np.ndarray, np.ndarray, np.ndarray]], facts: Wanted = False
) -> Batch:
    """Pad rows of (state, move ids, wins) into a Batch; with `facts`, also the facts of
    engine/facts/features.py for each row's position (True all, or the ``features`` a model
    reads)."""
    width = max(len(moves) for _, moves, _ in examples)
    moves = np.full((len(examples), width), -1, dtype=np.int64)
    wins = np.zeros((len(examples), width), dtype=np.float32)
    for row, (_, ids, values) in enumerate(examples):
        moves[row, : len(ids)] = ids
        wins[row, : len(ids)] = values
    states = np.stack([state for state, _, _ in examples]).astype(np.int64)
    moves_t = torch.from_numpy(moves)
    batch = Batch(torch.from_numpy(states), moves_t, torch.from_numpy(wins), moves_t >= 0)
    if facts:  # straight from the stored tokens (engine/facts/encoding.py)
        squares, per_move = token_facts(states, width, facts)
        batch.square_facts, batch.move_facts = torch.from_numpy(squares), torch.from_numpy(per_move)
    return batch


class BatchOrder:
    """Which dataset indices form batch `b` of epoch `e`, for this rank: a pure function of
    (seed, epoch), so resuming needs only the step.

    Every epoch: a permutation of the training positions, cut into windows of `bucket` global
    batches; each window is sorted by move count (less padding), cut into batches, and those
    batches are shuffled. A global batch of batch·world positions is split between ranks.
    """

    def __init__(
        self,
        lengths: np.ndarray,
        batch: int,
        bucket: int,
        seed: int,
        rank: int = 0,
        world: int = 1,
        stream: int = 0,
    ) -> None:
        self.lengths, self.batch, self.bucket = lengths, batch, max(1, bucket)
        self.seed, self.rank, self.world = seed, rank, world
        #: random stream: 0 for a run's first data segment, i for its i-th (--follow)
        self.stream = stream
        self.global_batch = batch * world
        self.per_epoch = len(lengths) // self.global_batch
        if self.per_epoch == 0:
            raise CommandError(
                f"{len(lengths)} training positions cannot fill one batch of "
                f"{self.global_batch}; lower --batch or annotate more positions"
            )
        self._cache: tuple[int, np.ndarray] | None = None

    def epoch_batches(self, epoch: int) -> np.ndarray:
        """[per_epoch, global_batch] dataset indices of one epoch."""
        if self._cache and self._cache[0] == epoch:
            return self._cache[1]
        key = [self.seed, epoch] if self.stream == 0 else [self.seed, self.stream, epoch]
        rng = np.random.default_rng(key)
        order = rng.permutation(len(self.lengths))[: self.per_epoch * self.global_batch]
        window = self.bucket * self.global_batch
        for start in range(0, len(order), window):
            chunk = order[start : start + window]
            order[start : start + window] = chunk[np.argsort(self.lengths[chunk], kind="stable")]
        batches = order.reshape(self.per_epoch, self.global_batch)
        batches = batches[rng.permutation(self.per_epoch)]
        self._cache = (epoch, batches)
        return batches

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, batch index within the epoch) of a global step."""
        return divmod(step, self.per_epoch)

    def indices(self, step: int) -> np.ndarray:
        epoch, index = self.position(step)
        global_batch = self.epoch_batches(epoch)[index]
        mine: np.ndarray = global_batch[self.rank :: self.world]
        return mine


def training_indices(dataset: AnnotatedDataset, excluded: set[bytes]) -> np.ndarray:
    """Indices of the training positions, minus any evaluation (puzzle) position."""
    if not excluded:
        return np.arange(len(dataset))
    keep = [i for i in range(len(dataset)) if position_key(dataset.state(i)) not in excluded]
    return np.asarray(keep, dtype=np.int64)

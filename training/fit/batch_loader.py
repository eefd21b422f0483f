"""Batches for the training loop, made ahead in worker processes when asked.

Making a batch is python-chess work (decoding boards, computing the facts: about 1 ms a
position), so on a GPU one process cannot keep up with the model: 1,024 positions take a
second to make and a fraction of that to train on. ``fit --loader-workers N`` makes batches
in N processes (a ``torch.utils.data.DataLoader`` over step numbers), in step order, so a run
trains on exactly the batches it would have trained on without workers and resumes the same.

The workers hold a snapshot of the data feed taken when they start: when ``--follow`` starts
a new data segment the loader is restarted from the next step.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

import torch
from torch.utils.data import DataLoader, Dataset

from oneply.engine.facts.features import Wanted
from oneply.training.fit.batches import Batch, collate
from oneply.training.fit.data_feed import DataFeed

#: batches each worker keeps ready
PREFETCH = 4


class StepBatches(Dataset[Batch]):
    """Item `step` is the batch the feed gives for that training step."""

    def __init__(self, feed: DataFeed, facts: Wanted):
        self.feed, self.facts = feed, facts

    def __getitem__(self, step: int) -> Batch:
        return collate(self.feed.batch(step), facts=self.facts)


def _one_thread(_: int) -> None:
    """Each worker is one core of batch making; torch's own thread pool would fight the others."""
    torch.set_num_threads(1)


class BatchLoader:
    """`next(step)` is ``collate(feed.batch(step))``, made by `workers` processes ahead of time
    (0: made on the spot, in this process)."""

    def __init__(self, feed: DataFeed, facts: Wanted, workers: int = 0):
        self.feed, self.facts, self.workers = feed, facts, workers
        self._iterator: Iterator[Batch] | None = None
        self._next_step = -1

    def next(self, step: int) -> Batch:
        if self.workers <= 0:
            return collate(self.feed.batch(step), facts=self.facts)
        if self._iterator is None or step != self._next_step:
            self.restart(step)
        assert self._iterator is not None
        self._next_step = step + 1
        return next(self._iterator)

    def restart(self, step: int) -> None:
        """Drop the batches made ahead and begin again at `step` from the feed as it is now
        (after a new --follow segment, whose batch order differs from the old one's)."""
        self.close()
        if self.workers <= 0:
            return
        loader = DataLoader(
            StepBatches(self.feed, self.facts),
            batch_size=None,  # items are whole batches already
            sampler=count(step),  # any iterable of indices will do
            num_workers=self.workers,
            prefetch_factor=PREFETCH,
            worker_init_fn=_one_thread,
        )
        self._iterator = iter(loader)
        self._next_step = step

    def close(self) -> None:
        """Stop the workers (also at the end of a run, so none outlives it)."""
        iterator, self._iterator = self._iterator, None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()

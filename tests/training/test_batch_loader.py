"""Batches made ahead in worker processes (fit --loader-workers): the same batches, in the same
order, as the trainer makes itself, across restarts and new --follow segments."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.batch_loader import BatchLoader  # noqa: E402
from oneply.training.fit.batches import Batch, asdict_shallow, collate  # noqa: E402
from oneply.training.fit.config import CHECKPOINT  # noqa: E402
from oneply.training.fit.data_feed import DataFeed  # noqa: E402
from oneply.training.fit.device import Dist  # noqa: E402
from tests.helpers.training import config, make_shard  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def same(a: Batch, b: Batch) -> bool:
    pairs = zip(asdict_shallow(a), asdict_shallow(b), strict=True)
    return all((x is None and y is None) or torch.equal(x, y) for x, y in pairs)


def test_workers_make_the_batches_the_trainer_would_in_order_and_after_a_restart(
    tmp_path: Path,
) -> None:
    data = make_shard(tmp_path / "data", 60)
    cfg = config(data, tmp_path / "run", follow=True, rescan_every=4)
    feed = DataFeed(cfg, Dist())
    feed.start(None, quiet=True)
    loader = BatchLoader(feed, True, workers=2)
    try:
        for step in [*range(0, 6), 9, 10]:  # a jump (a resumed run) restarts the workers
            assert same(loader.next(step), collate(feed.batch(step), facts=True)), step
        make_shard(data, 60, seed=1, name="chunk-000001")
        assert feed.rescan(12)  # a new segment: a new batch order from step 12 on
        loader.restart(13)
        for step in range(13, 17):
            assert same(loader.next(step), collate(feed.batch(step), facts=True)), step
    finally:
        loader.close()


def test_a_run_with_loader_workers_trains_the_same_weights(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 60)
    weights = {}
    for workers in (0, 2):
        out = tmp_path / f"workers-{workers}"
        fit.train(config(data, out, steps=5, bf16=False, loader_workers=workers), quiet=True)
        weights[workers] = torch.load(out / CHECKPOINT, weights_only=False)["model"]
    for key, plain in weights[0].items():
        assert torch.equal(weights[2][key], plain), key
